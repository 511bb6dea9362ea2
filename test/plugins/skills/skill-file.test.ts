import { describe, expect, it } from 'vitest';
import { decodeBase64, encodeBase64, utf8Text } from '../../../plugins/skills/src/skill-file/bytes.ts';
import { parseFrontmatter, splitFrontmatter } from '../../../plugins/skills/src/skill-file/frontmatter.ts';
import { fileKind, trustLevel } from '../../../plugins/skills/src/skill-file/inventory.ts';
import { readSkillFolder, safeSkillPath } from '../../../plugins/skills/src/skill-file/skill-folder.ts';
import { importedKey, localKey, readSkillMarkdown, toSlug } from '../../../plugins/skills/src/skill-file/skill-shape.ts';
import { parseSource } from '../../../plugins/skills/src/sources/source-locator.ts';

describe('frontmatter reader', () => {
  it('reads flat scalars, booleans, numbers, quotes and comments', () => {
    expect(parseFrontmatter('name: Pdf Tools # trailing\nrequired: true\nversion: 2\nquoted: "a: b"\nsingle: \'it\'\'s\'\n# comment\nempty:')).toEqual({
      name: 'Pdf Tools', required: true, version: 2, quoted: 'a: b', single: "it's", empty: null,
    });
  });
  it('reads nested objects and list literals', () => {
    expect(parseFrontmatter('metadata:\n  skillKey: acme/tools/pdf\n  service:\n    key: x/y/z\n  tags: [a, "b, c", 3]\nlist:\n  - one\n  - two')).toEqual({
      metadata: { skillKey: 'acme/tools/pdf', service: { key: 'x/y/z' }, tags: ['a', 'b, c', 3] }, list: ['one', 'two'],
    });
  });
  it('reads a | description as the block text, never the literal |', () => {
    const shape = readSkillMarkdown('---\nname: X\ndescription: |\n  Line one\n  Line two\n\nslug: x\n---\nBody', null);
    expect(shape.description).toBe('Line one\nLine two');
    expect(shape.slug).toBe('x');
    expect(shape.body).toBe('Body');
  });
  it('folds a > description into one line', () => {
    expect(readSkillMarkdown('---\ndescription: >\n  Folded\n  text\n---\n', null).description).toBe('Folded text');
    expect(parseFrontmatter('a: |-\n  keep\n  lines\nb: 1')).toEqual({ a: 'keep\nlines', b: 1 });
  });
  it('has no frontmatter without a closing fence', () => {
    expect(splitFrontmatter('---\nname: x\nno end').frontmatter).toBeNull();
  });
});

describe('slugs and keys', () => {
  it('derives the slug from slug, then name, then folder', () => {
    expect(readSkillMarkdown('---\nslug: My Slug\nname: Other\n---', 'dir').slug).toBe('my-slug');
    expect(readSkillMarkdown('---\nname: PDF Tools!\n---', 'dir').slug).toBe('pdf-tools');
    expect(readSkillMarkdown('no frontmatter', 'Folder_Name').slug).toBe('folder-name');
    expect(readSkillMarkdown('', null)).toMatchObject({ slug: 'skill', name: 'skill' });
    expect(toSlug('camelCaseName')).toBe('camel-case-name');
  });
  it('forms canonical keys and honours overrides in order', () => {
    expect(importedKey('Acme', 'Tools', 'pdf')).toBe('acme/tools/pdf');
    expect(localKey('0b6f0f8e-1111-4222-8333-444455556666', 'pdf')).toBe('company/0b6f0f8e-1111-4222-8333-444455556666/pdf');
    expect(readSkillMarkdown('---\nkey: a/b/c\nmetadata:\n  skillKey: d/e/f\n---', null).keyOverride).toBe('a/b/c');
    expect(readSkillMarkdown('---\nmetadata:\n  canonicalKey: D/E/F\n---', null).keyOverride).toBe('d/e/f');
    expect(readSkillMarkdown('---\nmetadata:\n  service:\n    skillKey: s/k/x\n---', null).keyOverride).toBe('s/k/x');
    expect(readSkillMarkdown('---\nkey: ../etc\n---', null).keyOverride).toBeNull();
  });
});

describe('inventory and trust', () => {
  it('classifies files and takes the highest class', () => {
    expect(fileKind('references/a.md')).toBe('reference');
    expect(fileKind('scripts/run.sh')).toBe('script');
    expect(fileKind('assets/logo.png')).toBe('asset');
    expect(trustLevel([{ path: 'SKILL.md', kind: 'skill' }, { path: 'references/a.md', kind: 'reference' }])).toBe('markdown_only');
    expect(trustLevel([{ path: 'SKILL.md', kind: 'skill' }, { path: 'assets/a.png', kind: 'asset' }])).toBe('assets');
    expect(trustLevel([{ path: 'assets/a.png', kind: 'asset' }, { path: 'scripts/x.py', kind: 'script' }])).toBe('scripts_executables');
  });
  it('walks only the skill folders in project_root mode, and refuses oversized and binary non-assets', () => {
    const text = (path: string, content = 'x') => ({ path, encoding: 'utf8' as const, content, size: content.length });
    const folder = readSkillFolder([
      text('SKILL.md', '---\nname: Root\n---'), text('README.md'), text('src/index.ts'), text('references/r.md'),
      { path: 'assets/big.bin', encoding: 'base64', content: null, size: 2 * 1024 * 1024 },
      { path: 'references/bin.md', encoding: 'base64', content: encodeBase64(new Uint8Array([0, 1, 2])), size: 3 },
      { path: 'assets/logo.png', encoding: 'base64', content: encodeBase64(new Uint8Array([137, 80, 78, 71])), size: 4 },
    ], 'proj', 'project_root', 'proj');
    if ('error' in folder) throw new Error(folder.error);
    expect(folder.files.map((file) => file.path)).toEqual(['SKILL.md', 'assets/logo.png', 'references/r.md']);
    expect(folder.warnings.join('\n')).toMatch(/assets\/big.bin is larger than 1048576 bytes/);
    expect(folder.warnings.join('\n')).toMatch(/references\/bin.md is not a text file/);
    expect(folder.trustLevel).toBe('assets');
  });
  it('checks skill-relative paths', () => {
    for (const bad of ['../x', '/etc/passwd', 'a//b', 'a\\b', 'a/./b', '']) expect(safeSkillPath(bad)).toBe(false);
    expect(safeSkillPath('references/a.md')).toBe(true);
  });
  it('decodes base64 and UTF-8 strictly', () => {
    const bytes = new Uint8Array([0xe2, 0x82, 0xac, 0x41]);
    expect(utf8Text(decodeBase64(encodeBase64(bytes)))).toBe('€A');
    expect(utf8Text(new Uint8Array([0xff, 0x41]))).toBeNull();
    expect(utf8Text(new Uint8Array([0x41, 0]))).toBeNull();
  });
});

describe('source forms', () => {
  it('reads every form', () => {
    expect(parseSource('https://github.com/acme/tools')).toMatchObject({ form: 'github', owner: 'acme', repo: 'tools', refAndPath: null, sourceKind: 'github' });
    expect(parseSource('https://github.com/acme/tools/tree/feature/x/skills/pdf')).toMatchObject({ refAndPath: 'feature/x/skills/pdf', blob: false });
    expect(parseSource('https://github.com/acme/tools/blob/main/skills/pdf/SKILL.md')).toMatchObject({ refAndPath: 'main/skills/pdf/SKILL.md', blob: true });
    expect(parseSource('acme/tools')).toMatchObject({ form: 'github', skill: null });
    expect(parseSource('acme/tools/pdf')).toMatchObject({ form: 'github', skill: 'pdf' });
    expect(parseSource('https://skills.sh/acme/tools/pdf')).toMatchObject({ form: 'github', sourceKind: 'skills_sh', skill: 'pdf' });
    expect(parseSource('npx skills add acme/tools --skill pdf')).toMatchObject({ form: 'github', owner: 'acme', sourceKind: 'skills_sh', skill: 'pdf', original: 'npx skills add acme/tools --skill pdf' });
    expect(parseSource('https://raw.githubusercontent.com/acme/tools/main/SKILL.md')).toMatchObject({ form: 'url' });
    expect(parseSource('/tmp/skills/pdf')).toMatchObject({ form: 'local', path: '/tmp/skills/pdf' });
    expect(() => parseSource('not a source at all')).toThrow(/Unrecognised skill source/);
    expect(() => parseSource('https://user:pw@github.com/a/b')).toThrow(/credentials/);
  });
});
