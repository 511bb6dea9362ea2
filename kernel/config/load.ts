import { readFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { configSchema, type KeelConfig } from './schema.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Raised when configuration is invalid; the message names the offending field. */
export class ConfigError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`Invalid configuration: ${field} ${message}`);
    this.field = field;
  }
}

export interface ConfigSources {
  /** Command-line flags, already parsed (`--port`, `--host`, `--data-dir`, ...). */
  flags?: Partial<Record<'port' | 'host' | 'dataDir' | 'config' | 'mode' | 'exposure' | 'publicBaseUrl' | 'databaseUrl', string>>;
  env?: NodeJS.ProcessEnv;
  /** Direct overrides, used by tests and embedders; applied last. */
  overrides?: DeepPartial<KeelConfig>;
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.KEEL_HOME ? resolve(env.KEEL_HOME) : join(homedir(), '.keel');
}

/**
 * Builds the configuration from defaults, the config file (`<dataDir>/config.json` or
 * `--config`/`KEEL_CONFIG`), environment variables and flags, in that order of precedence,
 * then validates it. Invalid configuration throws a ConfigError naming the field.
 */
export function loadConfig(sources: ConfigSources = {}): KeelConfig {
  const env = sources.env ?? process.env;
  const flags = sources.flags ?? {};
  const dataDir = resolve(flags.dataDir ?? sources.overrides?.dataDir ?? defaultDataDir(env));
  const config: Record<string, any> = {
    deploymentMode: 'local_trusted',
    server: { host: '127.0.0.1', port: 3100, exposure: 'private' },
    auth: { baseUrlMode: 'auto' },
    database: {},
    dataDir,
    logging: { level: 'info' },
    limits: { jsonBodyBytes: 1024 * 1024, attachmentBytes: 10 * 1024 * 1024 },
  };

  const configFile = flags.config ?? env.KEEL_CONFIG ?? join(dataDir, 'config.json');
  if (existsSync(configFile)) {
    let fromFile: unknown;
    try {
      fromFile = JSON.parse(readFileSync(configFile, 'utf8'));
    } catch (error) {
      throw new ConfigError(configFile, `is not valid JSON (${(error as Error).message})`);
    }
    merge(config, fromFile as Record<string, unknown>);
  }

  const fromEnv: Record<string, any> = { server: {}, auth: {}, database: {}, logging: {} };
  if (env.KEEL_DEPLOYMENT_MODE) fromEnv.deploymentMode = env.KEEL_DEPLOYMENT_MODE;
  if (env.HOST) fromEnv.server.host = env.HOST;
  if (env.PORT) fromEnv.server.port = parsePort('PORT', env.PORT);
  if (env.KEEL_EXPOSURE) fromEnv.server.exposure = env.KEEL_EXPOSURE;
  if (env.KEEL_ALLOWED_HOSTNAMES) fromEnv.server.allowedHostnames = env.KEEL_ALLOWED_HOSTNAMES.split(/[\s,]+/).filter(Boolean);
  if (env.KEEL_HEADERS_TIMEOUT_MS) fromEnv.server.headersTimeoutMs = Number(env.KEEL_HEADERS_TIMEOUT_MS);
  if (env.KEEL_KEEP_ALIVE_TIMEOUT_MS) fromEnv.server.keepAliveTimeoutMs = Number(env.KEEL_KEEP_ALIVE_TIMEOUT_MS);
  if (env.KEEL_BASE_URL_MODE) fromEnv.auth.baseUrlMode = env.KEEL_BASE_URL_MODE;
  if (env.KEEL_PUBLIC_BASE_URL) fromEnv.auth.publicBaseUrl = env.KEEL_PUBLIC_BASE_URL;
  if (env.KEEL_AGENT_JWT_SECRET) fromEnv.auth.agentJwtSecret = env.KEEL_AGENT_JWT_SECRET;
  if (env.DATABASE_URL) fromEnv.database.url = env.DATABASE_URL;
  if (env.KEEL_LOG_LEVEL) fromEnv.logging.level = env.KEEL_LOG_LEVEL;
  if (env.KEEL_BACKUP_DIR) fromEnv.backups = { ...fromEnv.backups, directory: env.KEEL_BACKUP_DIR };
  if (env.KEEL_BACKUP_INTERVAL_SECONDS) fromEnv.backups = { ...fromEnv.backups, intervalSeconds: Number(env.KEEL_BACKUP_INTERVAL_SECONDS) };
  if (env.KEEL_PLUGIN_PRIVATE_NETWORK_HOSTS) fromEnv.plugins = { privateNetworkHosts: env.KEEL_PLUGIN_PRIVATE_NETWORK_HOSTS.split(/[\s,]+/).filter(Boolean) };
  if (env.KEEL_LLM_PRIVATE_NETWORK_HOSTS) fromEnv.llm = { privateNetworkHosts: env.KEEL_LLM_PRIVATE_NETWORK_HOSTS.split(/[\s,]+/).filter(Boolean) };
  if (env.KEEL_PLUGIN_NETWORK_HOSTS) fromEnv.plugins = { ...fromEnv.plugins, networkHosts: env.KEEL_PLUGIN_NETWORK_HOSTS.split(/[\s,]+/).filter(Boolean) };
  if (env.KEEL_PLUGIN_SHARED_WORKER) fromEnv.plugins = { ...fromEnv.plugins, sharedWorker: { firstParty: parseSwitch('KEEL_PLUGIN_SHARED_WORKER', env.KEEL_PLUGIN_SHARED_WORKER) } };
  if (env.KEEL_PLUGIN_SHARED_WORKERS) fromEnv.plugins = { ...fromEnv.plugins, sharedWorker: { ...fromEnv.plugins?.sharedWorker, processes: Number(env.KEEL_PLUGIN_SHARED_WORKERS) } };
  merge(config, fromEnv);

  const fromFlags: Record<string, any> = { server: {}, auth: {}, database: {} };
  if (flags.mode) fromFlags.deploymentMode = flags.mode;
  if (flags.host) fromFlags.server.host = flags.host;
  if (flags.port) fromFlags.server.port = parsePort('--port', flags.port);
  if (flags.exposure) fromFlags.server.exposure = flags.exposure;
  if (flags.publicBaseUrl) fromFlags.auth.publicBaseUrl = flags.publicBaseUrl;
  if (flags.databaseUrl) fromFlags.database.url = flags.databaseUrl;
  merge(config, fromFlags);
  if (sources.overrides) merge(config, sources.overrides as Record<string, unknown>);

  validateConfig(config);
  return config as KeelConfig;
}

function parsePort(field: string, raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(field === 'PORT' ? 'server.port (PORT)' : 'server.port (--port)', `must be an integer between 0 and 65535, got "${raw}"`);
  return port;
}

function parseSwitch(field: string, raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['on', 'true', '1', 'yes'].includes(value)) return true;
  if (['off', 'false', '0', 'no'].includes(value)) return false;
  throw new ConfigError(field, `must be on or off, got "${raw}"`);
}

function merge(target: Record<string, any>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (value && typeof value === 'object' && !Array.isArray(value) && target[key] && typeof target[key] === 'object') {
      merge(target[key], value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}

const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
const validate = ajv.compile(configSchema);

export function validateConfig(config: Record<string, any>): asserts config is KeelConfig {
  if (!validate(config)) {
    const first = validate.errors![0]!;
    const path = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
    if (first.keyword === 'additionalProperties') {
      const extra = (first.params as { additionalProperty: string }).additionalProperty;
      throw new ConfigError(path ? `${path}.${extra}` : extra, 'is not a known setting');
    }
    if (first.keyword === 'required') {
      const missing = (first.params as { missingProperty: string }).missingProperty;
      throw new ConfigError(path ? `${path}.${missing}` : missing, 'is required');
    }
    if (first.keyword === 'enum') {
      throw new ConfigError(path, `must be one of ${(first.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`);
    }
    throw new ConfigError(path || '(root)', first.message ?? 'is invalid');
  }
  if (config.deploymentMode === 'local_trusted' && config.server.exposure !== 'private') {
    throw new ConfigError('server.exposure', 'must be "private" when deploymentMode is "local_trusted"');
  }
  if (config.server.exposure === 'public') {
    if (config.auth.baseUrlMode !== 'explicit') {
      throw new ConfigError('auth.baseUrlMode', 'must be "explicit" when server.exposure is "public"');
    }
    if (!config.auth.publicBaseUrl) {
      throw new ConfigError('auth.publicBaseUrl', 'is required when server.exposure is "public"');
    }
  }
  if (config.auth.baseUrlMode === 'explicit' && !config.auth.publicBaseUrl) {
    throw new ConfigError('auth.publicBaseUrl', 'is required when auth.baseUrlMode is "explicit"');
  }
}
