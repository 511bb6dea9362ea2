import { generateKeyPairSync } from 'node:crypto';

/**
 * What the kernel knows about adapters before the agent runtime arrives: the shape of an
 * externally registered type name, and the defaults some adapters fill in on create (the
 * built-in type names and their fields are the SDK's adapter catalog, sdk/shared/adapter-catalog.ts).
 * Adapter execution itself lives in the runtime plugin.
 */
export const DEFAULT_ADAPTER_TYPE = 'process';

/** Externally registered adapters are allowed, so any identifier-like name is accepted. */
export const ADAPTER_TYPE_PATTERN = '^[A-Za-z][A-Za-z0-9_.:-]{0,99}$';

/**
 * Default model per adapter, applied on create and hire when `adapterConfig.model` is absent and
 * no plugin contributes the type: a contributing plugin fills its tool's own default
 * (adapter-config-point.ts).
 */
export const DEFAULT_MODELS: Readonly<Record<string, string>> = {
  beta_local: 'beta-default',
  gamma_local: 'gamma-default',
  cursor: 'auto',
};

export const DEVICE_KEY_FIELD = 'devicePrivateKeyPem';

type Config = Record<string, unknown>;

export function applyCreateDefaults(adapterType: string, adapterConfig: Config): Config {
  return ensureDeviceKey(adapterType, { ...adapterConfig });
}

export function applyDefaultModel(adapterType: string, adapterConfig: Config): Config {
  const model = DEFAULT_MODELS[adapterType];
  if (!model || (typeof adapterConfig.model === 'string' && adapterConfig.model.trim() !== '')) return adapterConfig;
  return { ...adapterConfig, model };
}

/**
 * The gateway adapter authenticates its device with an Ed25519 key. One is generated when
 * none is configured, unless device auth is disabled. The key never reaches logs, activity
 * or responses (see maskConfig in agent-config.ts).
 */
export function ensureDeviceKey(adapterType: string, adapterConfig: Config): Config {
  if (adapterType !== 'zeta_gateway') return adapterConfig;
  if (isTrue(adapterConfig.disableDeviceAuth)) return adapterConfig;
  const existing = adapterConfig[DEVICE_KEY_FIELD];
  if (typeof existing === 'string' && existing.trim() !== '') return adapterConfig;
  const { privateKey } = generateKeyPairSync('ed25519');
  return { ...adapterConfig, [DEVICE_KEY_FIELD]: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true' || value === 1 || value === '1';
}
