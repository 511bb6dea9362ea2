import type { Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';

/**
 * Secret references inside agent configuration: `adapterConfig.env.<NAME>` may hold
 * `{type: "secret_ref", secretId, version}` where version is `latest` (the default; follows
 * rotations) or a positive integer (pinned).
 */
export interface SecretRef { envName: string; secretId: string; version: 'latest' | number }

export function isSecretRefShape(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value) && (value as { type?: unknown }).type === 'secret_ref';
}

/** Every secret reference in a configuration; malformed ones are refused with 422 naming the path. */
export function collectSecretRefs(adapterConfig: unknown): SecretRef[] {
  const env = (adapterConfig as { env?: unknown } | null)?.env;
  if (env === undefined || env === null) return [];
  if (typeof env !== 'object' || Array.isArray(env)) throw invalidRef('adapterConfig.env', 'must be an object of environment variables');
  const refs: SecretRef[] = [];
  for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
    if (!isSecretRefShape(value)) {
      if (value !== null && typeof value === 'object') throw invalidRef(`adapterConfig.env.${name}`, 'must be a string or a secret reference {type: "secret_ref", secretId, version}');
      continue;
    }
    const { secretId, version } = value;
    if (!isUuid(secretId)) throw invalidRef(`adapterConfig.env.${name}.secretId`, 'must be a uuid');
    let selector: 'latest' | number = 'latest';
    if (version !== undefined && version !== 'latest') {
      if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) throw invalidRef(`adapterConfig.env.${name}.version`, 'must be "latest" or a positive integer');
      selector = version;
    }
    refs.push({ envName: name, secretId: secretId.toLowerCase(), version: selector });
  }
  return refs;
}

function invalidRef(path: string, message: string): KeelError {
  return new KeelError(422, 'invalid_secret_ref', `Invalid secret reference: ${path} ${message}`, { details: { path } });
}

/** References must name secrets of the agent's own company (and pinned versions must exist). */
export async function assertSecretRefsBelongToCompany(db: Queryable, companyId: string, adapterConfig: unknown): Promise<void> {
  const refs = collectSecretRefs(adapterConfig);
  if (refs.length === 0) return;
  const ids = [...new Set(refs.map((r) => r.secretId))];
  const rows = await db.query<{ id: string; company_id: string; latest_version: number }>(
    `select id, company_id, latest_version from secrets where id in (${ids.map(() => '?').join(', ')})`, ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const ref of refs) {
    const secret = byId.get(ref.secretId);
    if (!secret || secret.company_id !== companyId) {
      throw new KeelError(422, 'secret_ref_company_mismatch', `Secret reference adapterConfig.env.${ref.envName} must name a secret of the same company`, { details: { path: `adapterConfig.env.${ref.envName}`, secretId: ref.secretId } });
    }
    if (ref.version !== 'latest' && ref.version > Number(secret.latest_version)) {
      throw invalidRef(`adapterConfig.env.${ref.envName}.version`, `names version ${ref.version} but the secret has ${secret.latest_version}`);
    }
  }
}
