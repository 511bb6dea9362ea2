import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import type { KeelConfig } from '../../kernel/config/schema.ts';
import { startKernel, type RunningKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';

export interface TestKernel {
  kernel: RunningKernel;
  url: string;
  databaseUrl: string;
  dataDir: string;
  /** A client connected to this kernel's database, for assertions on stored rows. */
  sql: pg.Pool;
  api: Api;
  /** Stops the kernel; the database is dropped unless `keepDatabase`. */
  stop(keepDatabase?: boolean): Promise<void>;
  databaseName: string;
}

export interface ApiResponse<T = any> { status: number; body: T; headers: Headers; text: string; requestId: string | null }

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  body?: unknown;
  rawBody?: string | Uint8Array | FormData;
  cookie?: string;
}

export interface Api {
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  get<T = any>(path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** The same client, sending a bearer token on every request. */
  as(token: string): Api;
}

/** The repository's first-party plugins, installed and enabled on a fresh instance as `npm start` does. */
export const FIRST_PARTY_PLUGINS = fileURLToPath(new URL('../../plugins', import.meta.url));
/** Their keys (each folder of plugins/ with a manifest is one, named by its folder), sorted. */
export const FIRST_PARTY_KEYS: readonly string[] = readdirSync(FIRST_PARTY_PLUGINS)
  .filter((name) => existsSync(join(FIRST_PARTY_PLUGINS, name, 'plugin.json')))
  // Packaged plugins (distribution: package) ship in plugins/ but are installed only on request.
  .filter((name) => (JSON.parse(readFileSync(join(FIRST_PARTY_PLUGINS, name, 'plugin.json'), 'utf8')) as { distribution?: string }).distribution !== 'package')
  .sort();

/**
 * Starts a real kernel over HTTP on a fresh database cloned from the run's migrated template.
 * `overrides` adjusts configuration (for example `{ deploymentMode: 'authenticated' }`).
 * `databaseUrl` runs it on a database the test prepared instead (see restricted-database.ts).
 */
export async function startTestKernel(overrides: Record<string, any> = {}, options: { captureLogs?: string[]; firstPartyDir?: string; databaseName?: string; databaseUrl?: string } = {}): Promise<TestKernel> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = options.databaseName ?? (options.databaseUrl ? new URL(options.databaseUrl).pathname.slice(1) : `t_${randomBytes(6).toString('hex')}`);
  // A database given by URL (a test that sets up its own roles) is neither created nor dropped here.
  if (!options.databaseName && !options.databaseUrl) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name} template keel_template`);
    await admin.end();
  }
  const databaseUrl = options.databaseUrl ?? adminUrl.replace(/\/[^/]*$/, `/${name}`);
  const dataDir = await mkdtemp(join(tmpdir(), 'keel-test-'));
  const config: KeelConfig = loadConfig({
    env: {},
    overrides: {
      dataDir,
      database: { url: databaseUrl, poolSize: 10 },
      logging: { level: (process.env.KEEL_TEST_LOG_LEVEL as KeelConfig['logging']['level']) ?? 'silent' },
      ...overrides,
      server: { host: '127.0.0.1', port: 0, exposure: 'private', ...(overrides.server ?? {}) },
    },
  });
  const capture = options.captureLogs;
  const log = capture
    ? createLogger('trace', new Writable({ write(chunk, _encoding, done) { capture.push(String(chunk)); done(); } }))
    : createLogger(config.logging.level);
  // Kernel tests run the kernel alone; a test of a first-party plugin passes FIRST_PARTY_PLUGINS.
  const kernel = await startKernel(config, { log, port: 0, firstPartyDir: options.firstPartyDir ?? join(dataDir, 'no-first-party-plugins') });
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  return {
    kernel, url: kernel.url, databaseUrl, dataDir, sql, databaseName: name,
    api: createApi(kernel.url),
    async stop(keepDatabase = false) {
      await sql.end();
      await kernel.stop();
      await rm(dataDir, { recursive: true, force: true });
      if (keepDatabase || options.databaseUrl) return;
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await cleanup.end();
    },
  };
}

/**
 * Every error body carries the request id of its response's X-Request-Id header: checked on
 * every error answer a test sees, then taken out of the body so that tests compare the error
 * itself (the id is in `requestId`).
 */
function withoutRequestId(status: number, body: unknown, requestId: string | null): unknown {
  if (status < 400 || !body || typeof body !== 'object' || Array.isArray(body) || !('error' in body)) return body;
  const { requestId: inBody, ...rest } = body as Record<string, unknown>;
  if (!requestId || inBody !== requestId) throw new Error(`error body requestId ${String(inBody)} does not match the X-Request-Id header ${String(requestId)}`);
  return rest;
}

export function createApi(baseUrl: string, defaults: RequestOptions = {}): Api {
  const request = async <T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> => {
    const merged = { ...defaults, ...options, headers: { ...defaults.headers, ...options.headers } };
    const headers: Record<string, string> = { ...merged.headers };
    if (merged.token) headers.authorization = `Bearer ${merged.token}`;
    if (merged.cookie) headers.cookie = merged.cookie;
    let body: string | Uint8Array | FormData | undefined;
    if (merged.rawBody !== undefined) body = merged.rawBody;
    else if (merged.body !== undefined) {
      body = JSON.stringify(merged.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    const requestId = response.headers.get('x-request-id');
    return { status: response.status, body: withoutRequestId(response.status, parsed, requestId) as T, headers: response.headers, text, requestId };
  };
  return {
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, body, options) => request('POST', path, { ...options, body }),
    patch: (path, body, options) => request('PATCH', path, { ...options, body }),
    put: (path, body, options) => request('PUT', path, { ...options, body }),
    delete: (path, options) => request('DELETE', path, options),
    as: (token) => createApi(baseUrl, { ...defaults, token }),
  };
}

export interface PeerKernel { kernel: RunningKernel; url: string; api: Api; stop(): Promise<void> }

/**
 * A second kernel process's worth of kernel (in this process) on the same database as `t`,
 * as operators run several behind a load balancer: its own data directory, the same keys.
 */
export async function startPeerKernel(t: TestKernel, overrides: Record<string, any> = {}, options: { firstPartyDir?: string } = {}): Promise<PeerKernel> {
  const dataDir = await mkdtemp(join(tmpdir(), 'keel-peer-'));
  for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(t.dataDir, file), join(dataDir, file)).catch(() => undefined);
  const config = loadConfig({ env: {}, overrides: { dataDir, database: { url: t.databaseUrl }, logging: { level: 'silent' }, ...overrides, server: { host: '127.0.0.1', port: 0, exposure: 'private' } } });
  const kernel = await startKernel(config, { log: createLogger(process.env.KEEL_TEST_LOG as any ?? 'silent'), port: 0, firstPartyDir: options.firstPartyDir ?? join(dataDir, 'no-first-party-plugins') });
  return {
    kernel, url: kernel.url, api: createApi(kernel.url),
    async stop() {
      await kernel.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
