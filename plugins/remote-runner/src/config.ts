import { PluginError } from '@keel/sdk/plugin';
import { parseHttpUrl } from './urls.ts';

/**
 * The eta_gateway adapterConfig (docs/api/runtime.md, "Remote runner"): validated on agent
 * create, hire and update, every refusal a 422 `invalid_adapter_config` naming the field, and
 * stored normalised (the base URL mapped to the run server's `/api`, defaults filled in).
 * `apiKey` may be sent in plain text: the kernel stores it in the vault and keeps only its
 * reference (it is this answer's secret field).
 */
export const SESSION_KEY_STRATEGIES = ['issue', 'agent', 'run', 'none'] as const;
export type SessionKeyStrategy = (typeof SESSION_KEY_STRATEGIES)[number];

export interface RemoteConfig {
  apiBaseUrl: string;
  dangerouslyAllowInsecureRemoteHttp: boolean;
  sessionKeyStrategy: SessionKeyStrategy;
  timeoutSec: number;
  eventReconnectMs: number;
  serviceApiUrl: string | null;
  headers: Record<string, string>;
  /** Configured headers whose value the plugin sees masked (a sensitive name or value): never sent. */
  maskedHeaders: string[];
  instructions: string | null;
}

export const DEFAULTS = { sessionKeyStrategy: 'issue', timeoutSec: 600, eventReconnectMs: 2000, dangerouslyAllowInsecureRemoteHttp: false } as const;
const MAX_TIMEOUT_SEC = 86_400;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

function invalid(field: string, message: string): PluginError {
  const path = `adapterConfig.${field}`;
  return new PluginError(422, 'invalid_adapter_config', `${path} ${message}`, { path });
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** localhost, 127.0.0.0/8 and ::1: plain HTTP there never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The run server's API root: a dashboard root (`https://runner.example.com/`) or a chat URL
 * (`.../chat/...`) is mapped to its `/api`; an address already naming its API is kept. No
 * credentials, query or fragment; plain HTTP only to loopback unless explicitly allowed.
 */
export function normaliseBaseUrl(value: unknown, allowInsecure: boolean): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid('apiBaseUrl', 'is required: the address of the run server');
  const url = parseHttpUrl(value.trim());
  if (!url) throw invalid('apiBaseUrl', 'must be an absolute http or https URL');
  if (url.hasCredentials) throw invalid('apiBaseUrl', 'must not carry credentials (use apiKey)');
  if (url.hasQueryOrFragment) throw invalid('apiBaseUrl', 'must not have a query or fragment');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecure) {
    throw invalid('apiBaseUrl', 'uses plain HTTP to a host that is not loopback; use https, or set dangerouslyAllowInsecureRemoteHttp');
  }
  let path = url.pathname.replace(/\/+$/, '');
  const chat = path.search(/\/chat(\/|$)/);
  if (chat !== -1) path = `${path.slice(0, chat)}/api`;
  else if (path === '') path = '/api';
  return `${url.origin}${path}`;
}

function integer(config: Record<string, unknown>, field: 'timeoutSec' | 'eventReconnectMs', min: number, max: number): number {
  const value = config[field];
  if (value === undefined || value === null) return DEFAULTS[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw invalid(field, `must be an integer from ${min} to ${max}`);
  return value;
}

function apiKeyOf(value: unknown): void {
  if (typeof value === 'string') {
    if (value.trim() === '' || value.length > 4096) throw invalid('apiKey', 'must be the run server\'s key (1 to 4096 characters) or a secret reference');
    if (/[\r\n\0]/.test(value)) throw invalid('apiKey', 'cannot contain line breaks');
    return;
  }
  if (!isObject(value) || value.type !== 'secret_ref') throw invalid('apiKey', 'is required: the run server\'s key, or a secret reference {type: "secret_ref", secretId, version?}');
  if (typeof value.secretId !== 'string' || !UUID.test(value.secretId)) throw invalid('apiKey.secretId', 'must be a uuid');
  const version = value.version;
  if (version !== undefined && version !== 'latest' && !(typeof version === 'number' && Number.isInteger(version) && version > 0)) {
    throw invalid('apiKey.version', 'must be "latest" or a positive integer');
  }
}

/** The configuration as stored: validated, normalised, defaults filled in, other keys kept. */
export function normaliseConfig(config: Record<string, unknown>): Record<string, unknown> {
  const allowInsecure = config.dangerouslyAllowInsecureRemoteHttp ?? DEFAULTS.dangerouslyAllowInsecureRemoteHttp;
  if (typeof allowInsecure !== 'boolean') throw invalid('dangerouslyAllowInsecureRemoteHttp', 'must be a boolean');
  const apiBaseUrl = normaliseBaseUrl(config.apiBaseUrl, allowInsecure);
  apiKeyOf(config.apiKey);
  const strategy = config.sessionKeyStrategy ?? DEFAULTS.sessionKeyStrategy;
  if (typeof strategy !== 'string' || !(SESSION_KEY_STRATEGIES as readonly string[]).includes(strategy)) {
    throw invalid('sessionKeyStrategy', `must be one of ${SESSION_KEY_STRATEGIES.join(', ')}`);
  }
  const next: Record<string, unknown> = {
    ...config, apiBaseUrl, dangerouslyAllowInsecureRemoteHttp: allowInsecure, sessionKeyStrategy: strategy,
    timeoutSec: integer(config, 'timeoutSec', 1, MAX_TIMEOUT_SEC), eventReconnectMs: integer(config, 'eventReconnectMs', 10, 600_000),
  };
  if (config.serviceApiUrl !== undefined && config.serviceApiUrl !== null) {
    const url = typeof config.serviceApiUrl === 'string' ? parseHttpUrl(config.serviceApiUrl) : null;
    if (!url || url.hasCredentials) throw invalid('serviceApiUrl', 'must be an absolute http or https URL without credentials');
  }
  if (config.headers !== undefined && config.headers !== null) {
    if (!isObject(config.headers)) throw invalid('headers', 'must be an object of header names to values');
    const entries = Object.entries(config.headers);
    if (entries.length > 50) throw invalid('headers', 'may hold at most 50 headers');
    for (const [name, value] of entries) {
      if (!HEADER_NAME.test(name)) throw invalid(`headers.${name}`, 'is not a valid header name');
      if (typeof value !== 'string' || value.length > 4096 || /[\r\n\0]/.test(value)) throw invalid(`headers.${name}`, 'must be a string of at most 4096 characters without line breaks');
    }
  }
  if (config.instructions !== undefined && config.instructions !== null && (typeof config.instructions !== 'string' || config.instructions.length > 100_000)) {
    throw invalid('instructions', 'must be a string of at most 100000 characters');
  }
  return next;
}

/** The stored configuration as a run reads it (already validated; a value masked in the view is left out). */
export function runConfig(config: Record<string, unknown>): RemoteConfig {
  const headers: Record<string, string> = {};
  const maskedHeaders: string[] = [];
  if (isObject(config.headers)) {
    for (const [name, value] of Object.entries(config.headers)) {
      if (value === '[REDACTED]') maskedHeaders.push(name);
      else if (typeof value === 'string') headers[name] = value;
    }
  }
  return {
    apiBaseUrl: String(config.apiBaseUrl ?? ''),
    dangerouslyAllowInsecureRemoteHttp: config.dangerouslyAllowInsecureRemoteHttp === true,
    sessionKeyStrategy: (SESSION_KEY_STRATEGIES as readonly unknown[]).includes(config.sessionKeyStrategy) ? config.sessionKeyStrategy as SessionKeyStrategy : DEFAULTS.sessionKeyStrategy,
    timeoutSec: typeof config.timeoutSec === 'number' ? config.timeoutSec : DEFAULTS.timeoutSec,
    eventReconnectMs: typeof config.eventReconnectMs === 'number' ? config.eventReconnectMs : DEFAULTS.eventReconnectMs,
    serviceApiUrl: typeof config.serviceApiUrl === 'string' ? config.serviceApiUrl : null,
    headers,
    maskedHeaders,
    instructions: typeof config.instructions === 'string' ? config.instructions : null,
  };
}

/**
 * The kernel point `agent.adapter-config` (asked only for eta_gateway agents). The kernel then
 * checks the addresses by the rules it applies at connection: `apiBaseUrl` as an address Keel
 * connects to (never a metadata address, whatever dangerouslyAllowInsecureRemoteHttp says;
 * private or loopback only where the operator opened it), `serviceApiUrl` as this instance's own.
 */
export async function adapterConfigService(input: unknown): Promise<{ adapterConfig: Record<string, unknown>; secretFields: string[]; addressFields: string[]; instanceAddressFields: string[] }> {
  const { adapterConfig } = input as { adapterConfig: Record<string, unknown> };
  return { adapterConfig: normaliseConfig(adapterConfig), secretFields: ['apiKey'], addressFields: ['apiBaseUrl'], instanceAddressFields: ['serviceApiUrl'] };
}
