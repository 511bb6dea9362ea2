import { localImport as spec } from '../../../../sdk/capabilities/local-import.ts';
import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { LocalImportFile, LocalImportTree } from '../../../../sdk/capabilities/local-import.ts';
import type { KeelConfig } from '../../../config/schema.ts';
import { KeelError } from '../../../http/errors.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const MAX_FILES = 2000;
const MAX_DEPTH = 12;
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_TOTAL_BYTES = 8 * 1024 * 1024;
const NOT_WALKED = new Set(['.git', 'node_modules']);

/**
 * local.import: read-only reads below the operator's import roots. Every path, the one asked for
 * and each entry under it, is resolved with realpath (symbolic links followed) and must lie
 * inside a root and outside the data directory (its keyring and secrets), except
 * `<dataDir>/skills`. Only regular files are opened (a FIFO or a device would block or never end).
 */
const localImportCapability: KernelCapability<'config'> = {
  methods: {
    read: { run: (call) => readTree(call) },
  },
};

interface Roots { allowed: string[]; dataDir: string; dataSkills: string }

async function rootsOf(config: KeelConfig): Promise<Roots> {
  const dataDir = await realOrResolved(config.dataDir);
  const dataSkills = join(dataDir, 'skills');
  const configured = config.plugins?.localImport?.roots ?? (config.deploymentMode === 'local_trusted' ? [tmpdir(), dataSkills] : []);
  const allowed = await Promise.all(configured.filter((root) => isAbsolute(root)).map(realOrResolved));
  return { allowed, dataDir, dataSkills };
}

async function realOrResolved(path: string): Promise<string> {
  return realpath(path).catch(() => resolve(path));
}

const within = (path: string, root: string) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

function permitted(path: string, roots: Roots): boolean {
  if (within(path, roots.dataDir) && !within(path, roots.dataSkills)) return false;
  return roots.allowed.some((root) => within(path, root));
}

function denied(path: string): KeelError {
  return new KeelError(403, 'local_import_denied', `${path} is outside the paths this server allows imports from (plugins.localImport.roots)`);
}

async function readTree(call: BrokeredCall<'config'>): Promise<LocalImportTree> {
  const asked = call.args[0];
  if (typeof asked !== 'string' || !isAbsolute(asked) || asked.includes('\0')) throw new KeelError(400, 'invalid_arguments', 'localImport.read(path): an absolute path');
  if (asked.split(/[\\/]/).includes('..')) throw new KeelError(400, 'invalid_arguments', 'localImport.read(path): ".." is not allowed');
  const settings = call.kernel.config.plugins?.localImport;
  if (call.info.actor.type === 'agent' && settings?.allowAgents !== true) {
    throw new KeelError(403, 'local_import_denied', 'Imports from local paths are open to board users only; an operator may allow agents (plugins.localImport.allowAgents)');
  }
  const roots = await rootsOf(call.kernel.config);
  const lexical = resolve(asked);
  const real = await realpath(lexical).catch(() => null);
  // Outside the roots nothing is told, not even whether the path exists.
  if (!real) throw permitted(lexical, roots) ? new KeelError(404, 'local_path_not_found', `${asked} does not exist`) : denied(asked);
  if (!permitted(real, roots)) throw denied(asked);
  const info = await stat(real);
  const tree: LocalImportTree = { path: real, kind: info.isDirectory() ? 'directory' : 'file', files: [], skipped: [] };
  const budget = { files: 0, bytes: 0 };
  if (info.isFile()) {
    tree.files.push(await readFile(real, real.split(sep).pop()!, info.size, budget));
  } else if (info.isDirectory()) {
    await walk(real, '', 0, roots, tree, budget);
  } else {
    throw new KeelError(422, 'local_path_not_readable', `${asked} is neither a file nor a directory`);
  }
  return tree;
}

async function walk(dir: string, prefix: string, depth: number, roots: Roots, tree: LocalImportTree, budget: { files: number; bytes: number }): Promise<void> {
  if (depth > MAX_DEPTH) {
    tree.skipped.push({ path: prefix, reason: `deeper than ${MAX_DEPTH} levels` });
    return;
  }
  const entries = (await readdir(dir)).sort();
  for (const name of entries) {
    const rel = prefix ? `${prefix}/${name}` : name;
    if (NOT_WALKED.has(name)) continue;
    const path = join(dir, name);
    const own = await lstat(path).catch(() => null);
    if (!own) continue;
    let target = path;
    if (own.isSymbolicLink()) {
      const real = await realpath(path).catch(() => null);
      if (!real || !permitted(real, roots)) {
        tree.skipped.push({ path: rel, reason: 'a link leading outside the allowed paths' });
        continue;
      }
      target = real;
    }
    const info = await stat(target).catch(() => null);
    if (!info) continue;
    if (info.isDirectory()) {
      await walk(target, rel, depth + 1, roots, tree, budget);
    } else if (info.isFile()) {
      if (budget.files >= MAX_FILES || budget.bytes >= MAX_TOTAL_BYTES) {
        tree.skipped.push({ path: rel, reason: `over the import caps (${MAX_FILES} files, ${MAX_TOTAL_BYTES} bytes)` });
        continue;
      }
      tree.files.push(await readFile(target, rel, info.size, budget));
    } else {
      tree.skipped.push({ path: rel, reason: 'not a regular file' });
    }
  }
}

async function readFile(path: string, rel: string, size: number, budget: { files: number; bytes: number }): Promise<LocalImportFile> {
  budget.files += 1;
  if (size > MAX_FILE_BYTES) return { path: rel, encoding: 'utf8', content: null, size };
  const handle = await open(path, 'r');
  try {
    // Read at most the cap, whatever the file grew to since stat.
    const buffer = Buffer.alloc(Math.min(size, MAX_FILE_BYTES) + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_FILE_BYTES) return { path: rel, encoding: 'utf8', content: null, size: bytesRead };
    const bytes = buffer.subarray(0, bytesRead);
    budget.bytes += bytesRead;
    const text = bytes.includes(0) ? null : decodeUtf8(bytes);
    return text === null ? { path: rel, encoding: 'base64', content: bytes.toString('base64'), size: bytesRead } : { path: rel, encoding: 'utf8', content: text, size: bytesRead };
  } finally {
    await handle.close();
  }
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['config'] }, serves: { localImport: localImportCapability.methods } });
