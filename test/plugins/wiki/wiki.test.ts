import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanFolder } from '../../../kernel/host/plugin-sources.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_KEYS, FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { base, eventually, PACKAGE, tool, WIKI } from './helpers.ts';

/**
 * The knowledge-wiki plugin over HTTP: installed by package name, mounted per company,
 * bootstrapped, written and searched through its tools and routes, by two companies that never
 * see each other's wiki. Next to each wiki root lies `outside/secret.md`, which no call may
 * read or change.
 */
const PLUGIN_FOLDER = fileURLToPath(new URL('../../../plugins/wiki', import.meta.url));
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const SECRET = 'outside the wiki';

let t: TestKernel;
let tmp: string;
let rootA: string;
let rootB: string;
let companyA: any;
let companyB: any;
let keyA: string;
let keyB: string;
const A = () => ({ companyId: companyA.id, wikiId: 'default' });
const B = () => ({ companyId: companyB.id, wikiId: 'default' });

async function mount(companyId: string, root: string) {
  const res = await t.api.put(`/api/plugins/${WIKI}/companies/${companyId}/local-folders/wiki-root`, { path: root });
  expect(res.status, res.text).toBe(200);
}

async function ok(res: { status: number; text: string; body: any }, status = 200) {
  expect(res.status, res.text).toBe(status);
  return res.body;
}

async function operationsOf(companyId: string, spaceSlug = 'default') {
  return (await ok(await t.api.get(`${base}/operations?companyId=${companyId}&spaceSlug=${spaceSlug}&limit=500`))).operations as any[];
}

beforeAll(async () => {
  tmp = await realpath(await mkdtemp(join(tmpdir(), 'keel-wiki-')));
  rootA = join(tmp, 'a');
  rootB = join(tmp, 'b');
  for (const dir of [rootA, rootB, join(tmp, 'outside')]) await mkdir(dir);
  await writeFile(join(tmp, 'outside', 'secret.md'), SECRET);
  // A company's own AGENTS.md is kept by bootstrap.
  await writeFile(join(rootA, 'AGENTS.md'), '# Our own rules\n');
  t = await startTestKernel({});
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  keyA = await createAgentKey(t.api, (await createAgent(t.api, companyA.id)).id);
  keyB = await createAgentKey(t.api, (await createAgent(t.api, companyB.id)).id);
});

afterAll(async () => {
  await t?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('installation', () => {
  it('ships in plugins/ but is neither a first-party plugin started with Keel nor an example', async () => {
    const firstParty = await scanFolder(FIRST_PARTY_PLUGINS, 'first_party');
    expect(firstParty.map((found) => found.manifest.key)).not.toContain(WIKI);
    expect(FIRST_PARTY_KEYS).not.toContain('wiki');
    expect((await ok(await t.api.get('/api/plugins'))).map((p: any) => p.pluginKey)).not.toContain(WIKI);
    const examples = await ok(await t.api.get('/api/plugins/examples'));
    expect(examples.map((e: any) => e.pluginKey)).not.toContain(WIKI);
  });

  it('installs from a packed tarball, without a registry', async () => {
    const packed = join(tmp, 'pack');
    await mkdir(packed);
    execFileSync('npm', ['pack', PLUGIN_FOLDER, '--pack-destination', packed, '--ignore-scripts', '--silent'], { stdio: 'pipe' });
    const tarball = join(packed, 'keel-plugin-wiki-0.1.0.tgz');
    expect(existsSync(tarball)).toBe(true);
    const res = await t.api.post('/api/plugins/install', { localPath: tarball });
    try {
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({ pluginKey: WIKI, packageName: PACKAGE, status: 'installed', sourceKind: 'npm' });
      const { rows } = await t.sql.query('select source_path from plugins where key = $1', [WIKI]);
      expect(rows[0].source_path).toBe(join(t.dataDir, 'plugin-packages', 'tarballs', PACKAGE));
    } finally {
      expect((await t.api.delete(`/api/plugins/${WIKI}`)).status).toBe(200);
    }
  });

  it('installs by package name from the checkout; the first enable grants exactly the capabilities it lists, each with its reason', async () => {
    const installed = await ok(await t.api.post('/api/plugins/install', { packageName: PACKAGE }), 201);
    const manifest = JSON.parse(await readFile(join(PLUGIN_FOLDER, 'plugin.json'), 'utf8'));
    expect(installed).toMatchObject({ pluginKey: WIKI, packageName: PACKAGE, status: 'installed', databaseNamespace: 'llm_wiki' });
    expect((await t.sql.query('select source_path from plugins where key = $1', [WIKI])).rows[0].source_path).toBe(PLUGIN_FOLDER);
    expect(installed.capabilities).toEqual(manifest.capabilities);
    for (const capability of installed.capabilities) expect(capability.reason.length).toBeGreaterThan(10);
    expect(installed.capabilities.map((c: any) => c.id)).toEqual(expect.arrayContaining(['local.folders', 'database.namespace.migrate', 'database.namespace.write', 'ui.page.register', 'tools.register']));
    const again = await t.api.post('/api/plugins/install', { packageName: PACKAGE });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('plugin_already_installed');
    // Not enabled yet: its routes and tools do not exist.
    expect((await t.api.get(`${base}/overview?companyId=${companyA.id}`)).status).toBe(404);
    const enabled = await ok(await t.api.post(`/api/plugins/${WIKI}/enable`, {}));
    expect(enabled.grantedCapabilities.sort()).toEqual(manifest.capabilities.map((c: any) => c.id).sort());
    const tools = await ok(await t.api.get('/api/plugins/tools'));
    const names = tools.map((tl: any) => tl.key).filter((name: string) => name.startsWith(`${WIKI}.`)).sort();
    expect(names).toEqual(['wiki_advance_cursor', 'wiki_append_log', 'wiki_list_backlinks', 'wiki_list_pages', 'wiki_list_sources', 'wiki_next_cursor_window', 'wiki_propose_patch', 'wiki_read_page', 'wiki_read_source', 'wiki_search', 'wiki_update_index', 'wiki_write_page'].map((n) => `${WIKI}.${n}`));
  });

  it('declares the wiki-root mount readWrite and its UI slots', async () => {
    const folders = await ok(await t.api.get(`/api/plugins/${WIKI}/companies/${companyA.id}/local-folders`));
    expect(folders.folders).toEqual([expect.objectContaining({ folderKey: 'wiki-root', access: 'readWrite', configured: false })]);
    const ui = await ok(await t.api.get('/api/plugins/ui-contributions'));
    expect(JSON.stringify(ui)).toContain('wiki-sidebar');
  });
});

describe('folder mount and bootstrap', () => {
  it('refuses to bootstrap before the folder is configured, writing nothing', async () => {
    const res = await t.api.post(`${base}/bootstrap`, { companyId: companyA.id });
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('folder_not_configured');
    expect(await operationsOf(companyA.id)).toEqual([]);
  });

  it('lays out the root, keeping files that exist, and is idempotent', async () => {
    await mount(companyA.id, rootA);
    await mount(companyB.id, rootB);
    const first = await ok(await t.api.post(`${base}/bootstrap`, { companyId: companyA.id }));
    expect(first.created.sort()).toEqual(['IDEA.md', 'wiki/index.md', 'wiki/log.md']);
    expect(first.space).toMatchObject({ slug: 'default', status: 'active' });
    expect(await readFile(join(rootA, 'AGENTS.md'), 'utf8')).toBe('# Our own rules\n');
    for (const dir of ['wiki/sources', 'wiki/projects', 'wiki/entities', 'wiki/concepts', 'wiki/synthesis', 'raw']) expect(existsSync(join(rootA, dir)), dir).toBe(true);
    const second = await ok(await t.api.post(`${base}/bootstrap`, { companyId: companyA.id }));
    expect(second.created).toEqual([]);
    await ok(await t.api.post(`${base}/bootstrap`, { companyId: companyB.id }));
    expect(await readFile(join(rootB, 'AGENTS.md'), 'utf8')).toContain('Wiki maintainer instructions');
    const overview = await ok(await t.api.get(`${base}/overview?companyId=${companyA.id}`));
    expect(overview).toMatchObject({ companyId: companyA.id, wikiId: 'default', folderKey: 'wiki-root', folder: { configured: true, bootstrapped: true } });
    expect(overview.spaces[0]).toMatchObject({ slug: 'default', pages: 2 });
  });

  it('bootstrap is for the board: an agent gets 403', async () => {
    expect((await t.api.as(keyA).post(`${base}/bootstrap`, { companyId: companyA.id })).status).toBe(403);
  });
});

describe('pages', () => {
  let hash: string;

  it('writes, reads and lists a page; the hash is the sha256 of its content', async () => {
    const content = '# Attention\n\nAttention is what transformers run on.\n';
    const written = await ok(await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/attention.md', content }));
    expect(written.result).toEqual({ spaceSlug: 'default', path: 'concepts/attention.md', hash: sha(content), previousHash: null, created: true, changed: true });
    expect(await readFile(join(rootA, 'wiki/concepts/attention.md'), 'utf8')).toBe(content);
    const read = await ok(await tool(t, 'wiki_read_page', { ...A(), path: 'concepts/attention.md' }, keyA));
    expect(read.result).toMatchObject({ path: 'concepts/attention.md', content, hash: sha(content), backlinks: [] });
    hash = read.result.hash;
    const list = await ok(await tool(t, 'wiki_list_pages', { ...A(), prefix: 'concepts/' }, keyA));
    expect(list.result).toMatchObject({ total: 1, pages: [{ path: 'concepts/attention.md', title: 'Attention', hash, size: Buffer.byteLength(content) }] });
  });

  it('refuses a stale write and names the current hash; a write with the current hash goes through', async () => {
    const stale = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/attention.md', content: 'mine', expectedHash: sha('something older') }, keyA);
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ code: 'stale_write', details: { currentHash: hash } });
    expect(stale.body.error).toContain(hash);
    const mustBeNew = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/attention.md', content: 'mine', expectedHash: null }, keyA);
    expect(mustBeNew.status).toBe(409);
    expect(await readFile(join(rootA, 'wiki/concepts/attention.md'), 'utf8')).toContain('transformers');
    const updated = await ok(await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/attention.md', content: '# Attention\n\nAttention, revised.\n', expectedHash: hash }, keyA));
    expect(updated.result).toMatchObject({ previousHash: hash, created: false, changed: true });
    hash = updated.result.hash;
  });

  it('proposes a patch without changing anything', async () => {
    const before = (await operationsOf(companyA.id)).length;
    const proposed = await ok(await tool(t, 'wiki_propose_patch', { ...A(), path: 'concepts/attention.md', content: '# Attention\n\nSomething else.\n' }, keyA));
    expect(proposed.result).toMatchObject({ applied: false, currentHash: hash, proposedHash: sha('# Attention\n\nSomething else.\n'), create: false });
    expect(proposed.result.diff).toContain('-Attention, revised.');
    expect(proposed.result.diff).toContain('+Something else.');
    expect(await readFile(join(rootA, 'wiki/concepts/attention.md'), 'utf8')).toBe('# Attention\n\nAttention, revised.\n');
    expect((await operationsOf(companyA.id)).length).toBe(before);
  });

  it('refuses page names that escape the wiki, with nothing written anywhere', async () => {
    const escapes = ['../AGENTS.md', '../../outside/secret.md', '../../../outside/secret.md', '/etc/passwd.md', 'concepts/../../IDEA.md', '%2e%2e/AGENTS.md', 'concepts\\..\\x.md', '.hidden.md', 'concepts/./x.md', 'concepts//x.md', 'notes.txt', 'a\u0000.md'];
    for (const path of escapes) {
      for (const name of ['wiki_write_page', 'wiki_read_page', 'wiki_propose_patch']) {
        const res = await tool(t, name, { ...A(), path, content: 'pwned' }, keyA);
        expect(res.status, `${name} ${path}: ${res.text}`).toBe(400);
        expect(['invalid_path', 'validation_failed']).toContain(res.body.code);
      }
    }
    const source = await tool(t, 'wiki_read_source', { ...A(), path: '../wiki/concepts/attention.md' }, keyA);
    expect(source.status).toBe(400);
    expect(await readFile(join(tmp, 'outside', 'secret.md'), 'utf8')).toBe(SECRET);
    expect(await readFile(join(rootA, 'AGENTS.md'), 'utf8')).toBe('# Our own rules\n');
  });

  it('never writes control files, nor the log as a page', async () => {
    for (const path of ['AGENTS.md', 'IDEA.md', 'concepts/agents.md', 'log.md']) {
      const res = await tool(t, 'wiki_write_page', { ...A(), path, content: 'overwritten' }, keyA);
      expect(res.status, path).toBe(403);
      expect(res.body.code).toBe('control_file_protected');
    }
    expect(await readFile(join(rootA, 'AGENTS.md'), 'utf8')).toBe('# Our own rules\n');
    expect(await readFile(join(rootA, 'IDEA.md'), 'utf8')).toContain('What this wiki is for');
    expect(existsSync(join(rootA, 'wiki/AGENTS.md'))).toBe(false);
  });

  it('refuses to write through a link that leads out of the mount', async () => {
    await symlink(join(tmp, 'outside'), join(rootA, 'wiki', 'concepts', 'elsewhere'));
    const res = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/elsewhere/secret.md', content: 'pwned' }, keyA);
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe('path_outside_folder');
    const read = await tool(t, 'wiki_read_page', { ...A(), path: 'concepts/elsewhere/secret.md' }, keyA);
    expect(read.status).toBe(403);
    expect(await readFile(join(tmp, 'outside', 'secret.md'), 'utf8')).toBe(SECRET);
    await unlink(join(rootA, 'wiki', 'concepts', 'elsewhere'));
  });

  it('answers unknown pages, unknown wikis and bad input with 4xx', async () => {
    expect((await tool(t, 'wiki_read_page', { ...A(), path: 'concepts/missing.md' }, keyA)).body.code).toBe('page_not_found');
    expect((await tool(t, 'wiki_read_page', { ...A(), wikiId: 'other', path: 'concepts/attention.md' }, keyA)).body.code).toBe('wiki_not_found');
    const missing = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/x.md' }, keyA);
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('validation_failed');
    const badHash = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/x.md', content: 'x', expectedHash: 'abc' }, keyA);
    expect(badHash.status).toBe(400);
    expect(existsSync(join(rootA, 'wiki/concepts/x.md'))).toBe(false);
  });

  it('rewrites the index and appends to the log', async () => {
    const index = await ok(await tool(t, 'wiki_update_index', A(), keyA));
    expect(index.result).toMatchObject({ path: 'index.md', changed: true });
    const text = await readFile(join(rootA, 'wiki/index.md'), 'utf8');
    expect(text).toContain('[Attention](concepts/attention.md)');
    expect(text).not.toContain('log.md');
    await ok(await tool(t, 'wiki_append_log', { ...A(), entry: 'Revised attention.' }, keyA));
    await ok(await tool(t, 'wiki_append_log', { ...A(), entry: 'Second entry.' }, keyA));
    const log = await readFile(join(rootA, 'wiki/log.md'), 'utf8');
    expect(log.indexOf('Revised attention.')).toBeGreaterThan(0);
    expect(log.indexOf('Second entry.')).toBeGreaterThan(log.indexOf('Revised attention.'));
    expect(log.startsWith('# Log')).toBe(true);
  });
});

describe('search, backlinks and changes on disk', () => {
  it('finds pages by title and body words (prefixes), best first', async () => {
    await ok(await tool(t, 'wiki_write_page', { ...A(), path: 'entities/transformer.md', content: '# Transformer\n\nA model built on [[attention]] and [feed-forward](../concepts/feed-forward.md) layers.\n' }, keyA));
    await ok(await tool(t, 'wiki_write_page', { ...A(), path: 'synthesis/overview.md', content: '---\ntitle: Overview of models\n---\nSee [the concept](../concepts/attention.md) and the transformer.\n' }, keyA));
    const found = await ok(await tool(t, 'wiki_search', { ...A(), query: 'transform' }, keyA));
    expect(found.result.results.map((r: any) => r.path)).toEqual(['entities/transformer.md', 'synthesis/overview.md']);
    expect(found.result.results[0]).toMatchObject({ title: 'Transformer' });
    expect(found.result.results[0].snippet).toContain('**');
    const both = await ok(await tool(t, 'wiki_search', { ...A(), query: 'overview models' }, keyA));
    expect(both.result.results.map((r: any) => r.path)).toEqual(['synthesis/overview.md']);
    const none = await ok(await tool(t, 'wiki_search', { ...A(), query: '!!!' }, keyA));
    expect(none.result.results).toEqual([]);
  });

  it('lists backlinks from [[links]] and markdown links', async () => {
    const links = await ok(await tool(t, 'wiki_list_backlinks', { ...A(), path: 'concepts/attention.md' }, keyA));
    // The index written by wiki_update_index links every page too.
    expect(links.result.backlinks).toEqual([{ path: 'entities/transformer.md', title: 'Transformer' }, { path: 'index.md', title: 'Default index' }, { path: 'synthesis/overview.md', title: 'Overview of models' }]);
    const forward = await ok(await tool(t, 'wiki_list_backlinks', { ...A(), path: 'concepts/feed-forward.md' }, keyA));
    expect(forward.result.backlinks.map((b: any) => b.path)).toEqual(['entities/transformer.md']);
  });

  it('picks up a page written, changed and removed on disk outside Keel', async () => {
    const search = async (query: string) => (await ok(await tool(t, 'wiki_search', { ...A(), query }, keyA))).result.results.map((r: any) => r.path);
    await writeFile(join(rootA, 'wiki/concepts/zeppelin.md'), '# Zeppelin\n\nAirships, edited by hand. Links to [[transformer]].\n');
    expect(await eventually(() => search('zeppelin'), (paths) => paths.length === 1)).toEqual(['concepts/zeppelin.md']);
    expect((await ok(await tool(t, 'wiki_list_backlinks', { ...A(), path: 'entities/transformer.md' }, keyA))).result.backlinks.map((b: any) => b.path)).toContain('concepts/zeppelin.md');
    await writeFile(join(rootA, 'wiki/concepts/zeppelin.md'), '# Zeppelin\n\nNow about dirigibles.\n');
    await eventually(() => search('dirigibles'), (paths) => paths.length === 1);
    await unlink(join(rootA, 'wiki/concepts/zeppelin.md'));
    await eventually(() => search('zeppelin'), (paths) => paths.length === 0);
    const kinds = (await operationsOf(companyA.id)).map((o) => `${o.kind} ${o.path}`);
    expect(kinds).toEqual(expect.arrayContaining(['external_change concepts/zeppelin.md', 'external_delete concepts/zeppelin.md']));
  });
});

describe('spaces', () => {
  it('has a default space; creates more, each with its own wiki/, raw/, index and history', async () => {
    const listed = await ok(await t.api.get(`${base}/spaces?companyId=${companyA.id}`));
    expect(listed.spaces.map((s: any) => s.slug)).toEqual(['default']);
    const created = await ok(await t.api.post(`${base}/spaces`, { companyId: companyA.id, slug: 'research', name: 'Research' }), 201);
    expect(created).toMatchObject({ slug: 'research', name: 'Research', status: 'active', bootstrappedAt: null });
    expect((await t.api.post(`${base}/spaces`, { companyId: companyA.id, slug: 'research', name: 'Again' })).body.code).toBe('space_exists');
    expect((await t.api.post(`${base}/spaces`, { companyId: companyA.id, slug: 'default', name: 'Again' })).status).toBe(409);
    const boot = await ok(await t.api.post(`${base}/spaces/research/bootstrap`, { companyId: companyA.id }));
    expect(boot.created.sort()).toEqual(['spaces/research/wiki/index.md', 'spaces/research/wiki/log.md']);
    expect(existsSync(join(rootA, 'spaces/research/raw'))).toBe(true);
    await ok(await tool(t, 'wiki_write_page', { ...A(), spaceSlug: 'research', path: 'concepts/attention.md', content: '# Research attention\n\nOnly in research.\n' }, keyA));
    expect((await ok(await tool(t, 'wiki_search', { ...A(), query: 'only' }, keyA))).result.results).toEqual([]);
    expect((await ok(await tool(t, 'wiki_search', { ...A(), spaceSlug: 'research', query: 'only' }, keyA))).result.results.map((r: any) => r.path)).toEqual(['concepts/attention.md']);
    const ops = await operationsOf(companyA.id, 'research');
    expect(ops.map((o) => o.kind)).toEqual(['write_page', 'bootstrap', 'create_space']);
    expect((await operationsOf(companyA.id)).some((o) => o.path === 'concepts/attention.md' && o.summary === null && o.kind === 'write_page')).toBe(true);
  });

  it('updates and archives a space; an archived space takes no writes; the default one cannot be archived', async () => {
    const updated = await ok(await t.api.patch(`${base}/spaces/research`, { companyId: companyA.id, description: 'Papers' }));
    expect(updated).toMatchObject({ name: 'Research', description: 'Papers' });
    expect((await t.api.patch(`${base}/spaces/research`, { companyId: companyA.id })).status).toBe(400);
    expect((await t.api.post(`${base}/spaces/default/archive`, { companyId: companyA.id })).body.code).toBe('default_space_required');
    const archived = await ok(await t.api.post(`${base}/spaces/research/archive`, { companyId: companyA.id }));
    expect(archived.status).toBe('archived');
    const write = await tool(t, 'wiki_write_page', { ...A(), spaceSlug: 'research', path: 'concepts/b.md', content: 'x' }, keyA);
    expect(write.status).toBe(409);
    expect(write.body.code).toBe('space_archived');
    expect((await ok(await t.api.get(`${base}/spaces?companyId=${companyA.id}`))).spaces.map((s: any) => s.slug)).toEqual(['default']);
    expect((await ok(await t.api.get(`${base}/spaces?companyId=${companyA.id}&includeArchived=true`))).spaces.map((s: any) => s.slug)).toEqual(['default', 'research']);
  });

  it('refuses space slugs that are not slugs, and unknown spaces', async () => {
    for (const slug of ['../default', '..', 'Research', 'a/b', '%2e%2e']) {
      const res = await tool(t, 'wiki_write_page', { ...A(), spaceSlug: slug, path: 'concepts/x.md', content: 'x' }, keyA);
      expect(res.status, slug).toBe(400);
    }
    // (A literal %2e%2e segment is resolved to .. by the HTTP client itself, before it is sent.)
    for (const slug of ['..%2F..%2Foutside', 'UPPER', '-x']) {
      const res = await t.api.post(`${base}/spaces/${slug}/bootstrap`, { companyId: companyA.id });
      expect([400, 404], `${slug}: ${res.text}`).toContain(res.status);
    }
    expect((await t.api.post(`${base}/spaces`, { companyId: companyA.id, slug: '../x', name: 'x' })).status).toBe(400);
    expect((await tool(t, 'wiki_search', { ...A(), spaceSlug: 'nope', query: 'x' }, keyA)).body.code).toBe('space_not_found');
    expect((await t.api.post(`${base}/spaces/nope/archive`, { companyId: companyA.id })).status).toBe(404);
    expect(existsSync(join(tmp, 'outside', 'wiki'))).toBe(false);
    expect(existsSync(join(rootA, 'spaces', 'x'))).toBe(false);
  });

  it('space routes are for the board', async () => {
    expect((await t.api.as(keyA).post(`${base}/spaces`, { companyId: companyA.id, slug: 'mine', name: 'Mine' })).status).toBe(403);
    expect((await t.api.as(keyA).patch(`${base}/spaces/default`, { companyId: companyA.id, name: 'Mine' })).status).toBe(403);
    expect((await t.api.as(keyA).get(`${base}/spaces`)).status).toBe(200);
  });
});

describe('sources, query sessions, file-as-page, operations', () => {
  it('captures sources (board or agent) and lists and reads them', async () => {
    const captured = await ok(await t.api.as(keyA).post(`${base}/sources`, { title: 'Attention Is All You Need', content: 'The paper.', url: 'https://example.com/paper' }), 201);
    expect(captured.path).toMatch(/^\d{4}-\d{2}-\d{2}-attention-is-all-you-need\.md$/);
    const again = await ok(await t.api.post(`${base}/sources`, { companyId: companyA.id, title: 'Attention Is All You Need', content: 'Again.' }), 201);
    expect(again.path).toMatch(/-2\.md$/);
    const listed = await ok(await tool(t, 'wiki_list_sources', A(), keyA));
    expect(listed.result.sources.map((s: any) => s.path).sort()).toEqual([captured.path, again.path].sort());
    const read = await ok(await tool(t, 'wiki_read_source', { ...A(), path: captured.path }, keyA));
    expect(read.result.content).toContain('Source: https://example.com/paper');
    expect(read.result.content).toContain('The paper.');
    expect((await t.api.post(`${base}/sources`, { companyId: companyA.id, title: 'x' })).status).toBe(400);
  });

  it('starts a query session and files its answer as a page', async () => {
    const started = await ok(await t.api.post(`${base}/query-sessions`, { companyId: companyA.id, question: 'what is attention' }), 201);
    expect(started.session).toMatchObject({ spaceSlug: 'default', question: 'what is attention', filedPath: null });
    expect(started.results.map((r: any) => r.path)).toContain('concepts/attention.md');
    const filed = await ok(await t.api.post(`${base}/file-as-page`, { companyId: companyA.id, sessionId: started.session.id, path: 'synthesis/what-is-attention.md', content: '# What is attention\n\nAn answer.\n' }), 201);
    expect(filed).toMatchObject({ path: 'synthesis/what-is-attention.md', created: true, sessionId: started.session.id });
    const stale = await t.api.post(`${base}/file-as-page`, { companyId: companyA.id, path: 'synthesis/what-is-attention.md', content: 'x', expectedHash: sha('old') });
    expect(stale.status).toBe(409);
    expect((await t.api.post(`${base}/file-as-page`, { companyId: companyA.id, sessionId: '00000000-0000-4000-8000-000000000000', path: 'synthesis/x.md', content: 'x' })).body.code).toBe('query_session_not_found');
    expect((await t.api.post(`${base}/file-as-page`, { companyId: companyA.id, path: '../AGENTS.md', content: 'x' })).status).toBe(400);
    expect((await t.api.as(keyA).post(`${base}/query-sessions`, { question: 'x' })).status).toBe(403);
  });

  it('keeps an operation history of every change, newest first, and an activity entry each', async () => {
    const ops = await operationsOf(companyA.id);
    const kinds = ops.map((o) => o.kind);
    for (const kind of ['bootstrap', 'write_page', 'update_index', 'append_log', 'capture_source', 'start_query', 'file_as_page', 'external_change', 'external_delete']) expect(kinds, kind).toContain(kind);
    expect(new Date(ops[0].createdAt).getTime()).toBeGreaterThanOrEqual(new Date(ops[ops.length - 1].createdAt).getTime());
    const agentWrite = ops.find((o) => o.kind === 'append_log');
    expect(agentWrite).toMatchObject({ actorType: 'agent' });
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action like 'wiki.%' and details->>'spaceSlug' = 'default'", [companyA.id]);
    expect(rows[0].n).toBe(ops.length);
  });
});

describe('two companies', () => {
  it("never see each other's wiki", async () => {
    await ok(await tool(t, 'wiki_write_page', { ...B(), path: 'concepts/bees.md', content: '# Bees\n\nOnly company B knows about attention to bees.\n' }, keyB));
    const bSearch = await ok(await tool(t, 'wiki_search', { ...B(), query: 'attention' }, keyB));
    expect(bSearch.result.results.map((r: any) => r.path)).toEqual(['concepts/bees.md']);
    const aSearch = await ok(await tool(t, 'wiki_search', { ...A(), query: 'bees' }, keyA));
    expect(aSearch.result.results).toEqual([]);
    expect((await ok(await tool(t, 'wiki_read_page', { ...B(), path: 'concepts/attention.md' }, keyB).then((r) => ({ ...r, status: r.status === 404 ? 200 : r.status }))))).toMatchObject({ code: 'page_not_found' });
    expect(existsSync(join(rootA, 'wiki/concepts/bees.md'))).toBe(false);
  });

  it("refuses an agent naming another company's wiki, in tools and routes", async () => {
    const tool403 = await tool(t, 'wiki_read_page', { ...A(), path: 'concepts/attention.md' }, keyB);
    expect(tool403.status).toBe(403);
    expect(tool403.body.code).toBe('cross_company_denied');
    const write = await tool(t, 'wiki_write_page', { ...A(), path: 'concepts/pwned.md', content: 'x' }, keyB);
    expect(write.status).toBe(403);
    expect(existsSync(join(rootA, 'wiki/concepts/pwned.md'))).toBe(false);
    expect((await t.api.as(keyB).get(`${base}/overview?companyId=${companyA.id}`)).status).toBe(403);
    expect((await t.api.as(keyB).get(`${base}/operations?companyId=${companyA.id}`)).status).toBe(403);
    expect((await t.api.as(keyB).post(`${base}/sources`, { companyId: companyA.id, title: 'x', content: 'x' })).status).toBe(403);
    const boardMix = await t.api.post('/api/plugins/tools/execute', { tool: `${WIKI}.wiki_search`, companyId: companyB.id, input: { ...A(), query: 'attention' } });
    expect(boardMix.status).toBe(403);
    const noCompany = await t.api.get(`${base}/overview`);
    expect(noCompany.status).toBe(400);
    expect(noCompany.body.code).toBe('company_required');
    expect((await t.api.get(`${base}/overview?companyId=00000000-0000-4000-8000-000000000000`)).status).toBe(404);
  });
});

describe('MCP', () => {
  it('serves the wiki tools to an agent through the MCP endpoint', async () => {
    const client = new Client({ name: 'keel-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${keyA}` } } }));
    try {
      const listed = await client.listTools();
      expect(listed.tools.map((tl) => tl.name)).toContain(`${WIKI}.wiki_search`);
      const result = await client.callTool({ name: `${WIKI}.wiki_search`, arguments: { ...A(), query: 'transformer' } });
      expect(result.isError).toBeFalsy();
      const text = (result.content as Array<{ text: string }>)[0]!.text;
      expect(JSON.parse(text).results[0].path).toBe('entities/transformer.md');
    } finally {
      await client.close();
    }
  });
});
