import { looksBinary, utf8Length } from './bytes.ts';
import { fileKind, inInventory, MAX_SKILL_FILE_BYTES, mayBeBinary, SKILL_FILE, trustLevel, type FileKind, type InventoryMode, type TrustLevel } from './inventory.ts';
import { readSkillMarkdown, type SkillShape } from './skill-shape.ts';

/** A file as a source delivers it: text, or base64 bytes (binary), with its size in bytes. */
export interface SourceFile { path: string; encoding: 'utf8' | 'base64'; content: string | null; size: number }
export interface SkillFile { path: string; kind: FileKind; encoding: 'utf8' | 'base64'; content: string }

export interface SkillFolder {
  shape: SkillShape;
  markdown: string;
  files: SkillFile[];
  trustLevel: TrustLevel;
  warnings: string[];
}

export const MAX_FILES_PER_SKILL = 500;

/**
 * One skill from the files of its folder (paths relative to it). Files over 1 MiB, and binary
 * files outside assets/, are left out with a warning; a SKILL.md that is either is no skill.
 * `label` names the skill in warnings (its folder or locator).
 */
export function readSkillFolder(files: readonly SourceFile[], folderName: string | null, mode: InventoryMode, label: string): SkillFolder | { error: string } {
  const skillFile = files.find((file) => file.path === SKILL_FILE);
  if (!skillFile) return { error: `${label}: no ${SKILL_FILE}` };
  const checked = checkFile(skillFile, 'skill', label);
  if ('error' in checked) return checked;
  const markdown = checked.content;
  const warnings: string[] = [];
  const kept: SkillFile[] = [checked];
  const others = files.filter((file) => file.path !== SKILL_FILE && inInventory(file.path, mode)).sort((a, b) => (a.path < b.path ? -1 : 1));
  for (const file of others) {
    if (kept.length >= MAX_FILES_PER_SKILL) {
      warnings.push(`${label}: more than ${MAX_FILES_PER_SKILL} files; the rest were left out`);
      break;
    }
    const result = checkFile(file, fileKind(file.path), label);
    if ('error' in result) warnings.push(result.error);
    else kept.push(result);
  }
  return { shape: readSkillMarkdown(markdown, folderName), markdown, files: kept, trustLevel: trustLevel(kept), warnings };
}

function checkFile(file: SourceFile, kind: FileKind, label: string): SkillFile | { error: string } {
  if (file.size > MAX_SKILL_FILE_BYTES || file.content === null) {
    return { error: `${label}: ${file.path} is larger than ${MAX_SKILL_FILE_BYTES} bytes and was left out` };
  }
  const binary = file.encoding === 'base64' || looksBinary(file.content);
  if (binary && !mayBeBinary(kind)) return { error: `${label}: ${file.path} is not a text file (only assets/ may hold binary files) and was left out` };
  if (file.encoding === 'utf8' && utf8Length(file.content) > MAX_SKILL_FILE_BYTES) {
    return { error: `${label}: ${file.path} is larger than ${MAX_SKILL_FILE_BYTES} bytes and was left out` };
  }
  return { path: file.path, kind, encoding: file.encoding, content: file.content };
}

/** A skill-relative path an edit or a read may name: no absolute paths, `..`, backslashes or empty segments. */
export function safeSkillPath(path: string): boolean {
  if (path.length === 0 || path.length > 1024 || path.startsWith('/') || path.includes('\\') || /[\u0000-\u001f]/.test(path)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}
