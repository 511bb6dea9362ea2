import { REDACTED } from '../../sdk/shared/sanitize.ts';
import { unprocessable } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';

/**
 * Agent configuration objects: validation of `adapterConfig.env`, the desired-skills slot,
 * the shallow merge of PATCH, and masking for every view that leaves the server.
 */
type Config = Record<string, unknown>;

export const SKILL_SYNC_KEY = 'serviceSkillSync';

export function isPlainObject(value: unknown): value is Config {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export interface SecretRef { type: 'secret_ref'; secretId: string; version?: 'latest' | number }

export function isSecretRef(value: unknown): value is SecretRef {
  return isPlainObject(value) && value.type === 'secret_ref';
}

/**
 * `env` values are plain strings or secret references `{type: 'secret_ref', secretId,
 * version?}` with version `latest` or a positive integer. Anything else is refused with 422
 * naming the offending variable.
 */
export function validateAdapterEnv(adapterConfig: Config): void {
  const env = adapterConfig.env;
  if (env === undefined) return;
  if (!isPlainObject(env)) throw unprocessable('adapterConfig.env must be an object of variable names to values', { path: 'adapterConfig.env' }, 'invalid_adapter_config');
  for (const [name, value] of Object.entries(env)) {
    const path = `adapterConfig.env.${name}`;
    if (!ENV_NAME.test(name)) throw unprocessable(`${path}: not a valid environment variable name`, { path }, 'invalid_adapter_config');
    if (typeof value === 'string') continue;
    if (!isSecretRef(value)) {
      throw unprocessable(`${path} must be a string or a secret reference {type: 'secret_ref', secretId, version?}`, { path }, 'invalid_adapter_config');
    }
    if (!isUuid(value.secretId)) throw unprocessable(`${path}.secretId must be a uuid`, { path: `${path}.secretId` }, 'invalid_adapter_config');
    const version = value.version;
    if (version !== undefined && version !== 'latest' && !(typeof version === 'number' && Number.isInteger(version) && version > 0)) {
      throw unprocessable(`${path}.version must be 'latest' or a positive integer`, { path: `${path}.version` }, 'invalid_adapter_config');
    }
  }
}

export function readDesiredSkills(adapterConfig: Config): string[] {
  const sync = adapterConfig[SKILL_SYNC_KEY];
  const skills = isPlainObject(sync) ? sync.desiredSkills : undefined;
  return Array.isArray(skills) ? skills.filter((s): s is string => typeof s === 'string') : [];
}

/** Desired skills are stored as given; the skills plugin resolves them later. */
export function withDesiredSkills(adapterConfig: Config, desiredSkills: string[] | undefined): Config {
  if (desiredSkills === undefined) return adapterConfig;
  const sync = isPlainObject(adapterConfig[SKILL_SYNC_KEY]) ? adapterConfig[SKILL_SYNC_KEY] as Config : {};
  return { ...adapterConfig, [SKILL_SYNC_KEY]: { ...sync, desiredSkills: [...desiredSkills] } };
}

/** New agents do not run on a timer until someone enables it. */
export function normalizeNewRuntimeConfig(runtimeConfig: Config | undefined): Config {
  const next = { ...(runtimeConfig ?? {}) };
  const heartbeat = isPlainObject(next.heartbeat) ? { ...next.heartbeat } : {};
  if (typeof heartbeat.enabled !== 'boolean') heartbeat.enabled = false;
  next.heartbeat = heartbeat;
  return next;
}

/**
 * PATCH merges per top-level key: keys sent replace the stored ones, keys sent as null are
 * removed, keys not sent are kept. Masked values sent back unchanged keep the stored secret.
 */
export function mergeAdapterConfig(stored: Config, patch: Config): Config {
  const restored = restoreMasked(patch, stored, 'adapterConfig') as Config;
  const next: Config = { ...stored };
  for (const [key, value] of Object.entries(restored)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

/**
 * A client that read a masked view and sends it back must not overwrite the secret with the
 * marker: the marker stands for "unchanged". A marker with nothing stored behind it is an error.
 */
export function restoreMasked(incoming: unknown, stored: unknown, path: string): unknown {
  if (incoming === REDACTED) {
    if (stored === undefined || stored === null) {
      throw unprocessable(`${path} holds the redaction marker but no stored value exists; send the real value`, { path }, 'invalid_adapter_config');
    }
    return stored;
  }
  if (isPlainObject(incoming)) {
    const base = isPlainObject(stored) ? stored : {};
    const out: Config = {};
    for (const [key, value] of Object.entries(incoming)) out[key] = restoreMasked(value, base[key], `${path}.${key}`);
    return out;
  }
  return incoming;
}

const SENSITIVE_NAME = /(secret|passw(or)?d|passphrase|token|api[-_]?key|access[-_]?key|private[-_]?key|credential|cookie|session[-_]?key|authorization|bearer|signing[-_]?key|client[-_]?secret)/i;
const SENSITIVE_VALUE = [
  /^-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /^svc_[a-z]+_/,
  /^(sk|pk|rk)-[A-Za-z0-9_-]{8,}/,
  /^(ghp|gho|ghs|ghu|github_pat|xox[abpr]|glpat)[-_][A-Za-z0-9_-]{8,}/,
  /^AKIA[0-9A-Z]{12,}/,
  /^eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./,
  /^Bearer\s+\S{8,}/i,
];

/** Names that contain a sensitive word but name a choice, not a value (`sessionKeyStrategy`). */
const CHOICE_NAME = /strategy$/i;

function looksSensitive(value: string): boolean {
  return SENSITIVE_VALUE.some((pattern) => pattern.test(value.trim()));
}

/**
 * The view of a configuration object that may leave the server: secret references stay as
 * references (they name a secret, they are not one); plain strings under sensitive names or
 * shaped like credentials become the redaction marker; everything else is kept.
 */
export function maskConfig(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return (key && SENSITIVE_NAME.test(key) && !CHOICE_NAME.test(key)) || looksSensitive(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((item) => maskConfig(item));
  if (isPlainObject(value)) {
    if (isSecretRef(value)) return { ...value };
    const out: Config = {};
    for (const [name, item] of Object.entries(value)) out[name] = maskConfig(item, name);
    return out;
  }
  return value;
}
