import { secretsConfig as spec } from '../../../../sdk/capabilities/config-secrets.ts';
import { isSecretRef } from '../../../tenancy/agent-config.ts';
import { KeelError } from '../../../http/errors.ts';
import { isUuid } from '../../../http/validate.ts';
import { callCompany } from '../scope.ts';
import { DeliversSecrets, type BrokeredCall, type KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const FIELD = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;

/**
 * secrets.config: the secret a field of the calling plugin's own configuration names by
 * reference, for the company the call serves only. The configuration is read from the plugins
 * table (what the operator saved), not from anything the plugin sends.
 */
const configSecretsCapability: KernelCapability<'db' | 'vault'> = {
  methods: {
    resolve: { run: (call) => resolveConfigSecret(call) },
  },
};

async function resolveConfigSecret(call: BrokeredCall<'db' | 'vault'>): Promise<DeliversSecrets | null> {
  const field = call.args[0];
  if (typeof field !== 'string' || !FIELD.test(field)) throw new KeelError(400, 'invalid_arguments', 'configSecrets.resolve(configField): a configuration field name');
  const companyId = callCompany(call);
  const row = await call.kernel.db.maybeOne<{ config: Record<string, unknown> | null }>('select config from plugins where key = ?', [call.plugin]);
  const value = row?.config?.[field];
  const refs = (Array.isArray(value) ? value : [value]).filter(isSecretRef).filter((ref) => isUuid(ref.secretId));
  if (refs.length === 0) return null;
  const ids = refs.map((ref) => ref.secretId.toLowerCase());
  const owned = await call.kernel.db.query<{ id: string }>('select id::text as id from secrets where company_id = ? and id::text in (select jsonb_array_elements_text(?::jsonb))', [companyId, JSON.stringify(ids)]);
  const ref = refs.find((candidate) => owned.some((secret) => secret.id === candidate.secretId.toLowerCase()));
  if (!ref) return null;
  const selector = typeof ref.version === 'number' ? ref.version : 'latest';
  const revealed = await call.kernel.vault.reveal(call.kernel.db, companyId, ref.secretId.toLowerCase(), selector);
  await call.kernel.db.query(
    `insert into security_audit_log (company_id, actor_type, actor_id, event, details) values (?, 'system', ?, 'secret.plugin_config_resolved', ?::jsonb)`,
    [companyId, `plugin:${call.plugin}`, JSON.stringify({ plugin: call.plugin, field, secretId: ref.secretId.toLowerCase(), version: revealed.version })]);
  return new DeliversSecrets({ value: revealed.value, secretId: ref.secretId.toLowerCase(), version: revealed.version }, [revealed.value]);
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db', 'vault'] }, serves: { configSecrets: configSecretsCapability.methods } });
