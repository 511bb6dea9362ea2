import { chmod, chown, lstat, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { LeasedWorkspace } from '../../sdk/capabilities/executions.ts';
import { refusedRunVariable } from '../../sdk/capabilities/run-variable-names.ts';
import type { Database, Queryable } from '../db/database.ts';
import { isInside, mountRoot, resolveExisting } from '../files/folder-paths.ts';
import { KeelError } from '../http/errors.ts';
import { isSecretRefShape } from '../vault/secret-refs.ts';
import type { Vault } from '../vault/vault.ts';
import type { AgentIdentity } from './agent-user.ts';

/**
 * A process run in an environment lease (ProcessExecutionInput.workspace). The plugin names the
 * lease's directory and the environment's variables; the kernel trusts neither and checks:
 * - that the agent's board-approved adapterConfig names this environment (`environmentId`), and
 *   that an agent naming one never runs without its lease;
 * - that the directory is the lease's own (its last segment is the lease id), exists, and lies
 *   inside a read-write folder an operator mounted for the run's company, with every link
 *   resolved inside that folder (the confinement `local.workspaces` uses);
 * - that the agent user can reach it (every parent searchable), before handing it over (0700);
 * - that no variable name could change what the approved command runs (run-variable-names.ts),
 *   and that its secret references resolve in the run's company's vault.
 */
export interface PreparedWorkspace { environmentId: string; leaseId: string; dir: string; env: Record<string, string>; secrets: Array<{ envName: string; secretId: string; version: number }> }

/** The environment the agent's configuration names, checked against what the plugin passed. */
export function assertWorkspaceMatchesConfig(adapterConfig: unknown, workspace: LeasedWorkspace | undefined): string | null {
  const config = (adapterConfig && typeof adapterConfig === 'object' ? adapterConfig : {}) as Record<string, unknown>;
  const named = config.environmentId;
  if (named !== undefined && named !== null && (typeof named !== 'string' || !/^[0-9a-f-]{36}$/i.test(named))) {
    throw new KeelError(409, 'adapter_config_invalid', 'adapterConfig.environmentId must be the id of an environment', { details: { field: 'environmentId' } });
  }
  const environmentId = typeof named === 'string' ? named.toLowerCase() : null;
  if (environmentId && config.cwd !== undefined && config.cwd !== null) {
    throw new KeelError(409, 'adapter_config_invalid', 'adapterConfig.cwd and adapterConfig.environmentId exclude each other: a run in an environment works in its lease directory', { details: { field: 'cwd' } });
  }
  if (!workspace) {
    if (environmentId) throw new KeelError(409, 'environment_lease_required', 'The agent runs in an environment (adapterConfig.environmentId); the start must name the run\'s lease');
    return null;
  }
  if (workspace.environmentId.toLowerCase() !== environmentId) {
    throw new KeelError(409, 'environment_not_approved', 'The agent\'s board-approved adapterConfig does not name this environment; it cannot run in its leases');
  }
  return environmentId;
}

/** The variables' names pass the rule; secret references are revealed for the company (the caller audits). */
export async function resolveWorkspaceEnv(db: Queryable, vault: Vault, companyId: string, env: LeasedWorkspace['env']): Promise<Pick<PreparedWorkspace, 'env' | 'secrets'>> {
  const plain: Record<string, string> = {};
  const refs: Array<{ envName: string; secretId: string; selector: 'latest' | number }> = [];
  for (const [name, value] of Object.entries(env ?? {})) {
    const why = refusedRunVariable(name);
    if (why) throw new KeelError(409, 'environment_variable_refused', `The environment's variable ${name.slice(0, 128)} ${why}`, { details: { name: name.slice(0, 128) } });
    if (typeof value === 'string') {
      if (value.includes('\0')) throw new KeelError(409, 'environment_variable_refused', `The environment's variable ${name} holds a NUL character`, { details: { name } });
      plain[name] = value;
    } else if (isSecretRefShape(value)) {
      refs.push({ envName: name, secretId: String(value.secretId).toLowerCase(), selector: value.version === undefined || value.version === 'latest' ? 'latest' : Number(value.version) });
    }
  }
  const outcomes = await vault.revealMany(db, companyId, refs.map((ref) => ({ secretId: ref.secretId, selector: ref.selector })));
  const secrets: PreparedWorkspace['secrets'] = [];
  for (const [index, ref] of refs.entries()) {
    const outcome = outcomes[index]!;
    if (!outcome.ok) {
      throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve the environment's variable ${ref.envName}: ${outcome.error.message}`, { details: { envName: ref.envName, secretId: ref.secretId } });
    }
    plain[ref.envName] = outcome.value;
    secrets.push({ envName: ref.envName, secretId: ref.secretId, version: outcome.version });
  }
  return { env: plain, secrets };
}

/**
 * The lease directory's real path, confined to a read-write folder an operator mounted for the
 * company (the longest mount that contains it, as `local.workspaces` picks it).
 */
export async function confineLeaseDirectory(db: Database, companyId: string, cwd: string, leaseId: string): Promise<string> {
  const parts = cwd.split('/').filter((part) => part !== '');
  if (parts.some((part) => part === '.' || part === '..')) throw new KeelError(400, 'invalid_arguments', 'workspace.cwd may not contain "." or ".." segments');
  const shown = `/${parts.join('/')}`;
  if (parts[parts.length - 1]?.toLowerCase() !== leaseId.toLowerCase()) {
    throw new KeelError(403, 'workspace_outside_mount', 'workspace.cwd must be the lease\'s own directory (named by its id)');
  }
  const mounts = await db.query<{ folder_key: string; path: string }>(
    `select m.folder_key, m.path from plugin_folder_mounts m join plugins p on p.key = m.plugin_key
      where m.company_id = ? and p.status = 'enabled' and exists (select 1 from jsonb_array_elements(coalesce(p.manifest->'folders', '[]'::jsonb)) f
                                          where f->>'key' = m.folder_key and f->>'access' = 'readWrite')`, [companyId]);
  const mount = mounts.filter((row) => isInside(row.path, shown)).sort((a, b) => b.path.length - a.path.length)[0];
  if (!mount) throw new KeelError(403, 'workspace_outside_mount', `"${shown}" lies outside every read-write folder an operator mounted for the run's company`);
  let real: string | null;
  try {
    const root = await mountRoot(mount.folder_key, mount.path);
    real = await resolveExisting(root, parts.slice(mount.path.split('/').filter((part) => part !== '').length), shown);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'path_outside_folder') throw new KeelError(403, 'workspace_outside_mount', `"${shown}" leads outside the company's mounted folder (through a symbolic link)`);
    throw new KeelError(409, 'workspace_unavailable', `"${shown}" cannot be reached: ${(error as Error).message}`);
  }
  if (!real) throw new KeelError(409, 'workspace_unavailable', `"${shown}" does not exist`);
  const info = await lstat(real);
  if (!info.isDirectory()) throw new KeelError(409, 'workspace_unavailable', `"${shown}" is not a directory`);
  return real;
}

/**
 * Every parent of the lease directory must be searchable by the agent user: the kernel changes
 * nothing of an operator's folders, only the lease's own directory (handToAgentUser).
 */
export async function assertAgentCanReach(dir: string, identity: AgentIdentity): Promise<void> {
  if (!identity.separate) return;
  // The kernel writes the run's files into the directory as itself before handing it over: an
  // agent that could write in its parent could swap it for a link in between.
  const holder = await stat(dirname(dir));
  const agentWrites = (holder.mode & 0o002) !== 0 || (holder.uid === identity.uid && (holder.mode & 0o200) !== 0) || (holder.gid === identity.gid && (holder.mode & 0o020) !== 0);
  if (agentWrites) throw new KeelError(409, 'workspace_not_accessible', `The lease directory's parent ${dirname(dir)} is writable by the agent user; it must be the server's alone`);
  for (let parent = dirname(dir); ; parent = dirname(parent)) {
    const info = await stat(parent);
    const searchable = (info.mode & 0o001) !== 0 || (info.uid === identity.uid && (info.mode & 0o100) !== 0) || (info.gid === identity.gid && (info.mode & 0o010) !== 0);
    if (!searchable) throw new KeelError(409, 'workspace_not_accessible', `The agent user cannot reach the lease directory: ${parent} is not searchable by it; an operator should allow it (chmod o+x)`);
    if (parent === dirname(parent)) break;
  }
}

/** The lease directory becomes the agent user's (0700), once the kernel wrote the run's files into it. */
export async function handToAgentUser(dir: string, identity: AgentIdentity): Promise<void> {
  if (!identity.separate) return;
  await chown(dir, identity.uid, identity.gid);
  await chmod(dir, 0o700);
}

/**
 * Everything about a start's workspace, checked before the execution row exists. Which secrets
 * were read goes to the security audit log (names, ids and versions, never values).
 */
export async function prepareLeasedWorkspace(
  deps: { db: Database; vault: Vault; identity: () => AgentIdentity },
  audit: { plugin: string; runId: string; agentId: string; companyId: string },
  adapterConfig: unknown, workspace: LeasedWorkspace | undefined,
): Promise<PreparedWorkspace | null> {
  const environmentId = assertWorkspaceMatchesConfig(adapterConfig, workspace);
  if (!workspace || !environmentId) return null;
  const dir = await confineLeaseDirectory(deps.db, audit.companyId, workspace.cwd, workspace.leaseId);
  await assertAgentCanReach(dir, deps.identity());
  const { env, secrets } = await resolveWorkspaceEnv(deps.db, deps.vault, audit.companyId, workspace.env);
  if (secrets.length > 0) {
    await deps.db.query(
      `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
      [audit.companyId, `plugin:${audit.plugin}`, audit.agentId, audit.runId,
        JSON.stringify({ plugin: audit.plugin, execution: true, environmentId, leaseId: workspace.leaseId, secrets: secrets.map((secret) => ({ ...secret, source: 'environment' })) })]);
  }
  return { environmentId, leaseId: workspace.leaseId.toLowerCase(), dir, env, secrets };
}
