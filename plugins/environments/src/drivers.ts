import { PluginError, refusedRunVariable } from '@keel/sdk/plugin';

/**
 * Environment drivers. `local` runs on this machine: its root is a directory inside a folder an
 * operator mounted for the company, reached through `ctx.workspaces` (outside the isolate).
 * `ssh`, `sandbox` and `plugin` are listed with what they would do, but this instance has no
 * executor for them: creating, probing or leasing with them is refused with 422
 * `driver_not_configured`, never accepted and left to fail later.
 */
export type Driver = 'local' | 'ssh' | 'sandbox' | 'plugin';

const LOCAL_CONFIG_SCHEMA = {
  type: 'object', additionalProperties: false, required: ['root'],
  properties: { root: { type: 'string', description: 'Absolute path of the working-directory root, inside a folder an operator mounted for the company.' } },
};

const NOT_CONFIGURED: Record<Exclude<Driver, 'local'>, string> = {
  ssh: 'No SSH executor is configured on this instance: runs cannot be sent to a remote host.',
  sandbox: 'No sandbox provider is configured on this instance.',
  plugin: 'No plugin on this instance provides an environment driver.',
};

export function driverCapabilities() {
  const unsupported = (driver: Exclude<Driver, 'local'>, description: string) => ({
    driver, description, status: 'not_configured', configured: false, reason: NOT_CONFIGURED[driver],
    supportsSavedProbe: false, supportsUnsavedProbe: false, supportsRunExecution: false, supportsReusableLeases: false, configSchema: null,
  });
  return {
    drivers: [
      {
        driver: 'local', description: 'A working-directory root on this machine, with environment variables', status: 'supported', configured: true, reason: null,
        supportsSavedProbe: true, supportsUnsavedProbe: true, supportsRunExecution: true, supportsReusableLeases: true, configSchema: LOCAL_CONFIG_SCHEMA,
      },
      unsupported('ssh', 'A remote host reached over SSH'),
      unsupported('sandbox', 'A cloud sandbox from a provider'),
      unsupported('plugin', 'A driver provided by a plugin'),
    ],
  };
}

export function assertDriverConfigured(driver: string): asserts driver is 'local' {
  if (driver === 'local') return;
  const reason = NOT_CONFIGURED[driver as Exclude<Driver, 'local'>] ?? 'Unknown driver.';
  throw new PluginError(422, 'driver_not_configured', `The ${driver} driver is not available on this instance. ${reason}`, { driver });
}

/** The local driver's config: `{ root }`, an absolute path without `.`/`..` segments. */
export function checkLocalConfig(config: Record<string, unknown>): { root: string } {
  const extra = Object.keys(config).filter((key) => key !== 'root');
  if (extra.length) throw new PluginError(422, 'invalid_environment_config', `config: the local driver takes only root (not ${extra.join(', ')})`, { fields: extra });
  const root = config.root;
  if (typeof root !== 'string' || !root.startsWith('/')) throw new PluginError(422, 'invalid_environment_config', 'config.root: an absolute path is required for the local driver', { field: 'config.root' });
  if (root.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new PluginError(422, 'invalid_environment_config', 'config.root must not contain "." or ".." segments', { field: 'config.root' });
  }
  const normalised = `/${root.split('/').filter((segment) => segment !== '').join('/')}`;
  return { root: normalised };
}

/**
 * Secret values never enter an environment as text: a variable whose name says it holds a
 * secret must be a secret reference (`{type: 'secret_ref', secretId, version?}`), resolved by
 * the vault when a run starts. References are stored and answered as references.
 */
const SECRET_LIKE = /(SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)/i;

export function checkEnvVars(envVars: Record<string, unknown>): void {
  // Names that could change what an agent's approved command runs (PATH, LD_*, NODE_OPTIONS, SERVICE_*, ...): the kernel refuses them again at start.
  const refused = Object.keys(envVars).map((name) => [name, refusedRunVariable(name)] as const).filter(([, why]) => why !== null);
  if (refused.length) {
    throw new PluginError(422, 'environment_variable_refused', `envVars: ${refused.map(([name, why]) => `${name} ${why}`).join('; ')}`, { fields: refused.map(([name]) => name) });
  }
  const plain = Object.entries(envVars).filter(([name, value]) => typeof value === 'string' && SECRET_LIKE.test(name)).map(([name]) => name);
  if (plain.length) {
    throw new PluginError(422, 'secret_value_in_plain_text', `envVars: ${plain.join(', ')} look${plain.length === 1 ? 's' : ''} like secrets; store the value with POST /api/companies/{companyId}/secrets and reference it as {"type": "secret_ref", "secretId": "<uuid>"}`, { fields: plain });
  }
}
