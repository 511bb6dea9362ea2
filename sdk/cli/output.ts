import { relative, resolve } from 'node:path';
import type { InvalidManifestError } from '../build/validate-manifest.ts';
import { KeelApiError, KeelClient, KeelConnectionError } from '../client/index.ts';
import { unauthorizedHint } from './auth-hint.ts';
import { CliError } from './errors.ts';
import { resolveServerAddress, type ServerAddress } from './server-address.ts';

export { CliError } from './errors.ts';

/** Options every command understands. */
export interface GlobalOptions {
  /** The server's address; without it, worked out from the four flags below as the server does. */
  apiBase?: string;
  dataDir?: string;
  config?: string;
  host?: string;
  port?: string;
  apiKey?: string;
  json: boolean;
}

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

const addresses = new WeakMap<GlobalOptions, ServerAddress>();

/**
 * The server this invocation talks to, worked out on first use only: commands that never call
 * the server (create, build, test) must not fail on a broken config.json.
 */
export function serverAddress(options: GlobalOptions): ServerAddress {
  let address = addresses.get(options);
  if (!address) {
    const path = (value: string | undefined) => (value === undefined ? undefined : userPath(value));
    address = resolveServerAddress({ apiBase: options.apiBase, dataDir: path(options.dataDir), config: path(options.config), host: options.host, port: options.port }, process.env);
    addresses.set(options, address);
  }
  return address;
}

export function clientFor(options: GlobalOptions): KeelClient {
  return new KeelClient({ baseUrl: serverAddress(options).url, token: options.apiKey });
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

/** A type, not an interface: `plugin dev` passes it on as a plain record of its event. */
export type DescribedError = {
  error: string;
  code: string;
  status?: number;
  issues?: Array<{ path: string; message: string }>;
  /** What to do about it, one line each. */
  hint?: string[];
};

/** A failure as one structured record: what --json prints and what the human text is built from. */
export function describeError(error: unknown, options?: GlobalOptions): DescribedError {
  if (error instanceof KeelApiError) {
    const described: DescribedError = { error: error.message, code: error.code, status: error.status, issues: error.issues ?? (error.details as { issues?: [] } | undefined)?.issues };
    if (error.status === 401 && options) described.hint = unauthorizedHint(Boolean(options.apiKey));
    return described;
  }
  if (error instanceof KeelConnectionError) {
    // Names where the address came from: a CLI that guessed the wrong server must say why it chose that one.
    const source = options ? addresses.get(options)?.source : undefined;
    if (!source) return { error: error.message, code: 'connection_failed' };
    const hint = source === 'address from --api-base' ? undefined : ['Start it with npm start, or name the server as you started it: --data-dir, --port, --host or --api-base.'];
    return { error: `No Keel server at ${error.baseUrl} (${error.reason}; ${source}); is it running?`, code: 'connection_failed', ...(hint ? { hint } : {}) };
  }
  // By name: the manifest validator (and its schema) loads only with the commands that use it.
  if ((error as Error)?.name === 'InvalidManifestError') return { error: (error as InvalidManifestError).message, code: 'invalid_manifest', issues: (error as InvalidManifestError).issues };
  if (error instanceof CliError) return { error: error.message, code: error.code };
  return { error: String((error as Error)?.message ?? error), code: 'failed' };
}

/** Writes a failure to stderr (as JSON with --json) and marks the process as failed. */
export function report(options: GlobalOptions, error: unknown): void {
  const described = describeError(error, options);
  if (options.json) {
    process.stderr.write(`${JSON.stringify(described)}\n`);
  } else {
    const suffix = described.status ? ` (${described.code}, HTTP ${described.status})` : described.code === 'failed' || described.code === 'connection_failed' ? '' : ` (${described.code})`;
    const lines = [`Error: ${described.error}${suffix}`];
    for (const issue of described.issues ?? []) lines.push(`  - ${issue.path}: ${issue.message}`);
    lines.push(...(described.hint ?? []));
    process.stderr.write(`${lines.join('\n')}\n`);
  }
  process.exitCode = 1;
}
