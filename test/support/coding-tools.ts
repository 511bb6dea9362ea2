import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, chmod, copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The real coding-agent tools the local adapters' tests drive, pinned in test/coding-tools/
 * (package.json and its lockfile) and installed from the npm registry once per machine into a
 * cache folder outside the repository: together they weigh over a gigabyte, and Keel itself does
 * not need them (an operator installs the tools an agent uses). The folder is world-readable,
 * because agent processes run as the unprivileged `keel-agent` user when the server runs as root.
 *
 * `npm install` from the lockfile rather than `npm ci`: the lockfile cannot list the platform
 * packages of OpenCode the registry does not serve here, which `npm ci` would refuse as out of sync.
 *
 * Installed by the test run's global set-up (global-setup.ts), before any test file starts, so
 * no two workers install at once; a failed install is remembered and each test that needs a tool
 * fails with its reason rather than the whole run.
 */
const PINNED = join(dirname(fileURLToPath(import.meta.url)), '..', 'coding-tools');
const EXECUTABLES = { claude: 'claude', codex: 'codex', gemini: 'gemini', opencode: 'opencode', pi: 'pi' } as const;
export type CodingTool = keyof typeof EXECUTABLES;

/** The cache folder of the pinned set: one per lockfile, so a new pin installs afresh. */
async function cacheDir(): Promise<string> {
  const lock = await readFile(join(PINNED, 'package-lock.json'));
  const key = createHash('sha256').update(lock).digest('hex').slice(0, 16);
  return join(process.env.KEEL_CODING_TOOLS_DIR ?? join(tmpdir(), 'keel-coding-tools'), key);
}

const FAILED_MARK = 'install-failed.txt';

/** Installs the pinned tools unless the cache holds them; answers the folder. Never throws: a failure is written down for codingTool to report. */
export async function installCodingTools(): Promise<string> {
  const dir = await cacheDir();
  if (await exists(join(dir, 'node_modules', '.bin', 'claude'))) return dir;
  const staging = `${dir}.staging-${process.pid}`;
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    await copyFile(join(PINNED, 'package.json'), join(staging, 'package.json'));
    await copyFile(join(PINNED, 'package-lock.json'), join(staging, 'package-lock.json'));
    await promisify(execFile)('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: staging, maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 });
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
    await chmod(dirname(dir), 0o755);
    await chmod(dir, 0o755);
    await rm(join(dir, FAILED_MARK), { force: true });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, FAILED_MARK), `npm install of test/coding-tools failed: ${(error as Error).message}`);
  }
  return dir;
}

/** The absolute path of a pinned tool's executable; throws with the install's failure when it is missing. */
export async function codingTool(tool: CodingTool): Promise<string> {
  const dir = await cacheDir();
  const path = join(dir, 'node_modules', '.bin', EXECUTABLES[tool]);
  if (await exists(path)) return path;
  const failure = await readFile(join(dir, FAILED_MARK), 'utf8').catch(() => 'the test run\'s global set-up did not install them');
  throw new Error(`The pinned coding tool ${tool} is not installed in ${dir}: ${failure}`);
}

async function exists(path: string): Promise<boolean> {
  try { await access(path); return true; } catch { return false; }
}
