import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../sdk/cli/bin.ts', import.meta.url));
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult { code: number | null; stdout: string; stderr: string }

/**
 * The caller's environment without anything that chooses a server or a key, or npm's settings
 * of the run that started the tests (npm_config_local_prefix would send an npm run elsewhere),
 * with this Node first on PATH (what `npm` scripts and `#!/usr/bin/env node` find), plus `extra`.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean = { ...process.env };
  for (const name of ['INIT_CWD', 'KEEL_API_BASE', 'KEEL_API_KEY', 'KEEL_HOME', 'KEEL_CONFIG', 'KEEL_CONTEXT', 'KEEL_PROFILE', 'KEEL_COMPANY_ID', 'CLAUDE_CONFIG_DIR', 'CODEX_HOME', 'HOST', 'PORT']) delete clean[name];
  for (const name of Object.keys(clean)) if (name.toLowerCase().startsWith('npm_')) delete clean[name];
  return { ...clean, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, ...extra };
}

/** Runs `node --no-node-snapshot sdk/cli/bin.ts ...args` to completion; `input` is written to its stdin. */
export function runCli(args: string[], options: { cwd?: string; timeoutMs?: number; env?: Record<string, string>; input?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', CLI, ...args], { cwd: options.cwd ?? REPO, env: cliEnv(options.env) });
    child.stdin.end(options.input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`keel ${args.join(' ')} timed out\n${stdout}\n${stderr}`)); }, options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** A long-running CLI process (plugin dev) whose --json output is read line by line. */
export interface CliSession {
  child: ChildProcess;
  events: Array<Record<string, any>>;
  stderr(): string;
  /** Resolves with the first event (after `from`) that matches. */
  waitFor(match: (event: Record<string, any>) => boolean, options?: { timeoutMs?: number; from?: number }): Promise<Record<string, any>>;
  stop(): Promise<void>;
}

/**
 * Starts `keel ...args`, or `command` (for example `npm run --silent dev -- ...` in a plugin
 * project) in its own process group, so that stop() ends the command and what it started.
 */
export function startCli(args: string[], options: { command?: string[]; cwd?: string; env?: Record<string, string> } = {}): CliSession {
  const [file, ...before] = options.command ?? [process.execPath, '--no-node-snapshot', CLI];
  const child = spawn(file!, [...before, ...args], { cwd: options.cwd ?? REPO, env: cliEnv(options.env), detached: true });
  const events: Array<Record<string, any>> = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim()) events.push(JSON.parse(line) as Record<string, any>);
    }
    for (const wake of waiters) wake();
  });
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  return {
    child,
    events,
    stderr: () => stderr,
    waitFor(match, options = {}) {
      const from = options.from ?? 0;
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.slice(from).find(match);
          if (found) { cleanup(); resolve(found); }
        };
        const timer = setTimeout(() => { cleanup(); reject(new Error(`no matching dev event; got ${JSON.stringify(events)}\n${stderr}`)); }, options.timeoutMs ?? 20_000);
        const cleanup = () => { clearTimeout(timer); waiters.delete(check); };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    },
  };
}
