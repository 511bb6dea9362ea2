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
export async function resolveRunEnvironment(db: Queryable, vault: Vault, agent: { id: string; company_id: string; adapter_config: any }): Promise<ResolvedEnvironment> {
  const env: Record<string, string> = {};
  const secrets: ResolvedEnvironment['secrets'] = [];
  const configured = (agent.adapter_config?.env ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(configured)) {
    if (typeof value === 'string') env[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') env[name] = String(value);
  }
  const refs = collectSecretRefs(agent.adapter_config);
  const revealed = await Promise.all(refs.map(async (ref) => {
    try {
      return { ref, result: await vault.reveal(db, agent.company_id, ref.secretId, ref.version) };
    } catch (error) {
      if (error instanceof KeelError && error.status < 500) {
        throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve adapterConfig.env.${ref.envName}: ${error.message}`, { details: { envName: ref.envName, secretId: ref.secretId } });
      }
      throw error;
    }
  }));
  for (const { ref, result } of revealed) {
    env[ref.envName] = result.value;
    secrets.push({ envName: ref.envName, secretId: ref.secretId, version: result.version, source: 'reference' });
  }
  const grants = await db.query<{ key: string; secret_id: string; version_selector: string }>(
    `select key, secret_id, version_selector from agent_secret_grants where agent_id = ? and delivery in ('env', 'both') order by key`, [agent.id]);
  for (const grant of grants) {
    const selector = grant.version_selector === 'latest' ? 'latest' : Number(grant.version_selector);
    const result = await vault.reveal(db, agent.company_id, grant.secret_id, selector);
    env[grant.key] = result.value;
    secrets.push({ envName: grant.key, secretId: grant.secret_id, version: result.version, source: 'grant' });
  }
  return { env, secrets };
}
