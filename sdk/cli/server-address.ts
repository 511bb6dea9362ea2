import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { CliError } from './errors.ts';
import { runningServerUrl } from './running-server.ts';

/**
 * Where the CLI finds the server when no `--api-base` is given: the address the server itself
 * listens on, worked out from the same sources in the same order as kernel/config/load.ts
 * (defaults < `<data dir>/config.json` or `--config`/`KEEL_CONFIG` < `HOST`/`PORT` < `--host`/
 * `--port`). Re-implemented rather than imported: the SDK ships without the kernel. A server
 * running on the data directory has recorded its real address in the directory's lock, which
 * then wins over the reconstruction unless `--host` or `--port` say otherwise.
 */

/** The flags that choose the server; paths are already resolved against the user's directory. */
export interface AddressFlags {
  apiBase?: string;
  dataDir?: string;
  config?: string;
  host?: string;
  port?: string;
  /** The API base of the context profile in use, and the profile's name (for messages). */
  profileApiBase?: string;
  profileName?: string;
}

/** The data directory: `--data-dir`, else `KEEL_HOME`, else `~/.keel` (as the server decides it). */
export function dataDirectory(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  return flag ?? (env.KEEL_HOME ? resolve(env.KEEL_HOME) : join(homedir(), '.keel'));
}

export interface ServerAddress {
  url: string;
  /** Where the address came from, for messages: `port from /home/me/.keel/config.json`. */
  source: string;
}

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 3100;

interface Setting<T> { value: T; from: string | null }

export function resolveServerAddress(flags: AddressFlags, env: NodeJS.ProcessEnv): ServerAddress {
  if (flags.apiBase) return { url: flags.apiBase, source: 'address from --api-base' };
  // A flag naming the server's directory, file, host or port is more specific than the
  // environment's ready-made address, as flags beat the environment for the server too.
  const namesServer = [flags.dataDir, flags.config, flags.host, flags.port].some((flag) => flag !== undefined);
  if (!namesServer && env.KEEL_API_BASE) return { url: env.KEEL_API_BASE, source: 'address from KEEL_API_BASE' };
  // A profile names its server outright; only flags naming the server's file, host or port beat it.
  const namesAddress = [flags.config, flags.host, flags.port].some((flag) => flag !== undefined);
  if (!namesAddress && flags.profileApiBase) return { url: flags.profileApiBase, source: `address from profile ${flags.profileName ?? 'default'}` };

  const dataDir = dataDirectory(flags.dataDir, env);
  if (flags.host === undefined && flags.port === undefined) {
    const running = runningServerUrl(dataDir);
    if (running) return { url: contactUrl(running.url), source: `address from the running server's ${running.lockFile}` };
  }
  const configFile = flags.config ?? env.KEEL_CONFIG ?? join(dataDir, 'config.json');
  const host: Setting<string> = { value: DEFAULT_HOST, from: null };
  const port: Setting<number> = { value: DEFAULT_PORT, from: null };

  const fileExists = existsSync(configFile);
  if (fileExists) {
    const server = readServerSection(configFile);
    if (server.host !== undefined) Object.assign(host, { value: checkHost(`server.host in ${configFile}`, server.host), from: configFile });
    if (server.port !== undefined) Object.assign(port, { value: checkPort(`server.port in ${configFile}`, server.port, false), from: configFile });
  }
  if (env.HOST) Object.assign(host, { value: env.HOST, from: 'HOST' });
  if (env.PORT) Object.assign(port, { value: checkPort('PORT', env.PORT), from: 'PORT' });
  if (flags.host) Object.assign(host, { value: flags.host, from: '--host' });
  if (flags.port) Object.assign(port, { value: checkPort('--port', flags.port), from: '--port' });

  // Only a missing file that would have been read is worth naming: it is the likely mistake.
  const source = describeSource(host, port, fileExists || (host.from && port.from) ? null : configFile);
  if (port.value === 0) {
    throw new CliError('server_port_unknown', `The server's port is 0 (${source}) and no server is running on ${dataDir}: a server started so picks a free port, so its address is not known here; pass --api-base with the address it printed ("Keel is listening on ...")`);
  }
  return { url: `http://${contactHost(host.value)}:${port.value}`, source };
}

/** The `server` object of a config file; the server refuses a file that is not JSON, and so does the CLI. */
function readServerSection(file: string): { host?: unknown; port?: unknown } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliError('invalid_config', `Cannot read the server's address from ${file}: ${(error as Error).message}`);
  }
  const server = (parsed as { server?: unknown } | null)?.server;
  return server && typeof server === 'object' ? server : {};
}

/** Text from the environment or a flag is parsed; the config file, like the server's schema, takes only a number. */
function checkPort(field: string, raw: unknown, parseText = true): number {
  const port = parseText && typeof raw === 'string' ? Number(raw) : raw;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new CliError('invalid_config', `${field} must be an integer between 0 and 65535, got ${JSON.stringify(raw)}`);
  }
  return port;
}

function checkHost(field: string, raw: unknown): string {
  if (typeof raw !== 'string' || !raw) throw new CliError('invalid_config', `${field} must be a host name or address, got ${JSON.stringify(raw)}`);
  return raw;
}

/** A recorded URL with its host made contactable (the server records the address it bound). */
function contactUrl(recorded: string): string {
  try {
    const url = new URL(recorded);
    return `${url.protocol}//${contactHost(url.hostname)}${url.port ? `:${url.port}` : ''}`;
  } catch {
    return recorded;
  }
}

/** A server bound to every interface is contacted on loopback; IPv6 literals need brackets in a URL. */
export function contactHost(host: string): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (bare === '0.0.0.0') return '127.0.0.1';
  if (bare === '::') return '[::1]';
  return bare.includes(':') ? `[${bare}]` : bare;
}

/** `port from /d/config.json`, `host and port from PORT`..., or the default with the file it looked for. */
function describeSource(host: Setting<string>, port: Setting<number>, missingFile: string | null): string {
  const parts: string[] = [];
  if (host.from && host.from === port.from) parts.push(`host and port from ${host.from}`);
  else {
    if (port.from) parts.push(`port from ${port.from}`);
    if (host.from) parts.push(`host from ${host.from}`);
  }
  if (!parts.length) parts.push('the default address');
  if (missingFile) parts.push(`as ${missingFile} does not exist`);
  return parts.join(', ');
}
