import type { Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { collectSecretRefs } from './secret-refs.ts';
import type { Vault } from './vault.ts';

export interface ResolvedEnvironment {
  env: Record<string, string>;
  /** Which secrets (and versions) went into the environment: for the audit trail, never values. */
  secrets: Array<{ envName: string; secretId: string; version: number; source: 'reference' | 'grant' }>;
}

/**
 * Turns an agent's configuration into the environment of a run: plain `env` strings pass
 * through, secret references are decrypted (latest or pinned), and secrets granted to the
 * agent with delivery `env` or `both` are added under their alias. A reference to a deleted
 * secret fails the whole resolution with a clear error rather than launching without it.
 */
export async function resolveRunEnvironment(db: Queryable, vault: Vault, agent: { id: string; company_id: string; adapter_config: any }, withhold: ReadonlySet<string> = new Set()): Promise<ResolvedEnvironment> {
  const env: Record<string, string> = {};
  const secrets: ResolvedEnvironment['secrets'] = [];
  const configured = (agent.adapter_config?.env ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(configured)) {
    if (withhold.has(name)) continue;
    if (typeof value === 'string') env[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') env[name] = String(value);
  }
  // Withheld names (a tool launch's withholdVariables) are not even revealed: the vault is not read for them.
  const refs = collectSecretRefs(agent.adapter_config).filter((ref) => !withhold.has(ref.envName));
  const grants = (await db.query<{ key: string; secret_id: string; version_selector: string }>(
    `select key, secret_id, version_selector from agent_secret_grants where agent_id = ? and delivery in ('env', 'both') order by key`, [agent.id]))
    .filter((grant) => !withhold.has(grant.key));
  const requests = [
    ...refs.map((ref) => ({ secretId: ref.secretId, selector: ref.version })),
    ...grants.map((grant) => ({ secretId: grant.secret_id, selector: grant.version_selector === 'latest' ? 'latest' as const : Number(grant.version_selector) })),
  ];
  const outcomes = await vault.revealMany(db, agent.company_id, requests);
  for (const [index, ref] of refs.entries()) {
    const outcome = outcomes[index]!;
    if (!outcome.ok) {
      throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve adapterConfig.env.${ref.envName}: ${outcome.error.message}`, { details: { envName: ref.envName, secretId: ref.secretId } });
    }
    env[ref.envName] = outcome.value;
    secrets.push({ envName: ref.envName, secretId: ref.secretId, version: outcome.version, source: 'reference' });
  }
  for (const [index, grant] of grants.entries()) {
    const outcome = outcomes[refs.length + index]!;
    if (!outcome.ok) throw new KeelError(422, 'secret_grant_unresolvable', `Cannot resolve the secret granted as ${grant.key}: ${outcome.error.message}`);
    env[grant.key] = outcome.value;
    secrets.push({ envName: grant.key, secretId: grant.secret_id, version: outcome.version, source: 'grant' });
  }
  return { env, secrets };
}
