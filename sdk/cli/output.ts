import { relative, resolve } from 'node:path';
import type { InvalidManifestError } from '../build/validate-manifest.ts';
import { KeelApiError, KeelClient, KeelConnectionError } from '../client/index.ts';

/** Options every command understands. */
export interface GlobalOptions {
  apiBase: string;
  apiKey?: string;
  json: boolean;
}

export const DEFAULT_API_BASE = 'http://127.0.0.1:3100';

/**
 * Paths on the command line are the user's: `npm run keel` runs in the project root, so they
 * resolve against the directory npm was started from (INIT_CWD) when there is one.
 */
export function userPath(path: string): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), path);
}

/** A path as the user would type it from where they are. */
export function shownPath(path: string): string {
  const shown = relative(process.env.INIT_CWD ?? process.cwd(), path);
  return shown.startsWith('..') ? path : shown || '.';
}

export function clientFor(options: GlobalOptions): KeelClient {
  return new KeelClient({ baseUrl: options.apiBase, token: options.apiKey });
}

/** Prints the human lines, or with --json the data as one line of JSON. */
export function emit(options: Pick<GlobalOptions, 'json'>, human: string | string[], data: unknown): void {
  if (options.json) process.stdout.write(`${JSON.stringify(data)}\n`);
  else process.stdout.write(`${Array.isArray(human) ? human.join('\n') : human}\n`);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MB`;
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** A failure as one structured record: what --json prints and what the human text is built from. */
export function describeError(error: unknown): { error: string; code: string; status?: number; issues?: Array<{ path: string; message: string }> } {
  if (error instanceof KeelApiError) return { error: error.message, code: error.code, status: error.status, issues: error.issues ?? (error.details as { issues?: [] } | undefined)?.issues };
  if (error instanceof KeelConnectionError) return { error: error.message, code: 'connection_failed' };
  // By name: the manifest validator (and its schema) loads only with the commands that use it.
  if ((error as Error)?.name === 'InvalidManifestError') return { error: (error as InvalidManifestError).message, code: 'invalid_manifest', issues: (error as InvalidManifestError).issues };
  if (error instanceof CliError) return { error: error.message, code: error.code };
  return { error: String((error as Error)?.message ?? error), code: 'failed' };
}

/** Writes a failure to stderr (as JSON with --json) and marks the process as failed. */
export function report(options: Pick<GlobalOptions, 'json'>, error: unknown): void {
  const described = describeError(error);
  if (options.json) {
    process.stderr.write(`${JSON.stringify(described)}\n`);
  } else {
    const suffix = described.status ? ` (${described.code}, HTTP ${described.status})` : described.code === 'failed' || described.code === 'connection_failed' ? '' : ` (${described.code})`;
    const lines = [`Error: ${described.error}${suffix}`];
    for (const issue of described.issues ?? []) lines.push(`  - ${issue.path}: ${issue.message}`);
    process.stderr.write(`${lines.join('\n')}\n`);
  }
  process.exitCode = 1;
}

/** A usage or precondition error of the CLI itself. */
export class CliError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'CliError';
    this.code = code;
  }
}
