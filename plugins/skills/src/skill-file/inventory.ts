/**
 * The file inventory of a skill folder: each file's kind by where it sits, and the skill's
 * trust level from the highest class among them (pure).
 */
export type FileKind = 'skill' | 'reference' | 'script' | 'asset' | 'markdown' | 'other';
export type TrustLevel = 'markdown_only' | 'assets' | 'scripts_executables';
/** `full`: the whole folder; `project_root`: SKILL.md at a project's root, so only the skill subfolders. */
export type InventoryMode = 'full' | 'project_root';

export const TRUST_ORDER: readonly TrustLevel[] = ['markdown_only', 'assets', 'scripts_executables'];
export const SKILL_FILE = 'SKILL.md';
const SKILL_SUBFOLDERS = ['references/', 'scripts/', 'assets/'] as const;
/** Files that run as programs wherever they sit. */
const EXECUTABLE = /\.(sh|bash|zsh|fish|ps1|bat|cmd|py|rb|pl|php|js|mjs|cjs|ts|mts|cts|jsx|tsx|lua|go|rs|java|kt|swift|exe|dll|so|dylib|bin|jar|wasm)$/i;
const MARKDOWN = /\.(md|markdown|mdx|txt)$/i;

export function fileKind(path: string): FileKind {
  if (path === SKILL_FILE) return 'skill';
  if (path.startsWith('references/')) return 'reference';
  if (path.startsWith('scripts/')) return 'script';
  if (path.startsWith('assets/')) return 'asset';
  return MARKDOWN.test(path) ? 'markdown' : 'other';
}

/** Whether a path (relative to the skill folder) belongs to the skill in this mode. */
export function inInventory(path: string, mode: InventoryMode): boolean {
  if (path === SKILL_FILE) return true;
  if (mode === 'project_root') return SKILL_SUBFOLDERS.some((prefix) => path.startsWith(prefix));
  return true;
}

export function trustClass(path: string, kind: FileKind): TrustLevel {
  if (kind === 'script' || EXECUTABLE.test(path)) return 'scripts_executables';
  if (kind === 'asset' || kind === 'other') return 'assets';
  return 'markdown_only';
}

export function trustLevel(files: ReadonlyArray<{ path: string; kind: FileKind }>): TrustLevel {
  let level = 0;
  for (const file of files) level = Math.max(level, TRUST_ORDER.indexOf(trustClass(file.path, file.kind)));
  return TRUST_ORDER[level]!;
}

/** Only assets may be binary; every other file must be text. */
export const mayBeBinary = (kind: FileKind) => kind === 'asset';
export const MAX_SKILL_FILE_BYTES = 1024 * 1024;
