import { defineCapability, method } from './define.ts';
import { nullable } from './schemas.ts';

/**
 * Secrets an operator named in the plugin's configuration by reference, never by value: a
 * configuration field holding `{type: 'secret_ref', secretId, version?}`, or a list of them (one
 * per company). The kernel resolves the reference whose secret belongs to the company the call
 * serves (another company's secret is never resolved), records the resolution in the security
 * audit trail and delivers the value so that the worker keeps it out of everything the plugin
 * sends (answers, logs, activity). null when the field names no secret of this company.
 */
export interface ConfigSecretsCapability {
  resolve(configField: string): Promise<{ value: string; secretId: string; version: number } | null>;
}

export const secretsConfig = defineCapability<{ configSecrets: ConfigSecretsCapability }>()({
  id: 'secrets.config',
  summary: "Decrypt the company's secrets that the plugin's configuration names by reference",
  members: {
    configSecrets: {
      resolve: method('kernel', [{ type: 'string', minLength: 1, maxLength: 100 }], nullable({ type: 'object', required: ['value', 'secretId', 'version'] }), { scope: 'company' }),
    },
  },
});
