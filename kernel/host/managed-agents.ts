import type { Tx } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import type { ManagedAgentManifest, PluginManifest } from '../../sdk/plugin/manifest.ts';
import { CONFIG_FIELDS, recordRevision } from '../tenancy/agent-config-revisions.ts';
import { lockCompanyShortnames, uniqueNameForCreate } from '../tenancy/agent-shortname.ts';
import { eventAgent, MANAGED_PAUSE_REASON, type AgentRow } from '../tenancy/agents.ts';
import { placeOperatorHold } from '../tenancy/scope-holds.ts';
import { AGENT_WITH_SPEND } from '../tenancy/month-spend.ts';

/**
 * Managed agents (a manifest's `managed.agents`, capability `agents.managed`): the host, never
 * the plugin's code, makes one agent per company and key while the plugin is enabled, marks it
 * `managed_by_plugin`/`managed_key` (migration 0030) and makes it paused (`managed`, with the
 * board's kind of hold) until the board approves or writes its configuration, pauses it with a hold of the plugin's own
 * when the plugin is disabled and lifts only that hold when it is enabled again. Uninstalling
 * leaves the agents (and any hold) as they are: they are the company's now.
 *
 * An agent declared `provision: "on_demand"` is made only when the plugin asks for it in a
 * company (provisionOnDemand): a feature a company never uses adds no agent to it.
 *
 * Exactly once across processes: the unique index on (company, plugin, key) makes a second
 * insert do nothing. No company missed: an enable provisions every company under the exclusive
 * `keel.managed_resources` lock, a company's creation provisions the enabled plugins under the
 * shared one, so whichever runs second sees what the first committed.
 */
export const DISABLED_HOLD_REASON = 'plugin_disabled';

const LOCK = "hashtext('keel.managed_resources')";

/** Who the host's writes are recorded as: the plugin the resources belong to. */
const ACTOR = (plugin: string) => ({ actorType: 'system' as const, actorId: `plugin:${plugin}` });

/** The managed agents the host makes by itself, on enable and at company creation (not those made on demand). */
export function managedAgentsOf(manifest: PluginManifest): ManagedAgentManifest[] {
  return (manifest.managed?.agents ?? []).filter((agent) => agent.provision !== 'on_demand');
}

/** Whether a plugin's managed agents take effect: declared, and `agents.managed` granted. */
function provisions(manifest: PluginManifest, granted: readonly string[] | null): boolean {
  return managedAgentsOf(manifest).length > 0 && (granted ?? []).includes('agents.managed');
}

/**
 * One managed agent of one company, made now if missing (`ctx.agents.provisionManaged`, the way
 * to make an agent declared `provision: "on_demand"`), in a transaction of its own: the agent
 * stays made whatever the plugin's call does next. Any key the manifest declares may be asked
 * for; the unique index makes concurrent asks one agent.
 */
export async function provisionOnDemand(kernel: Pick<KernelServices, 'db' | 'activity' | 'events'>, plugin: string, key: string, companyId: string): Promise<AgentRow> {
  // The common answer (every later ask) is one indexed read: the agent is there already.
  const existing = await kernel.db.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where company_id = ? and managed_by_plugin = ? and managed_key = ?`, [companyId, plugin, key]);
  if (existing) return existing;
  const row = await kernel.db.maybeOne<{ manifest: PluginManifest }>("select manifest from plugins where key = ? and status = 'enabled'", [plugin]);
  const spec = row?.manifest.managed?.agents?.find((agent) => agent.key === key);
  if (!spec) throw new KeelError(404, 'managed_agent_not_declared', `The plugin declares no managed agent "${key}" (managed.agents in plugin.json)`);
  try {
    return await kernel.db.transaction(async (tx) => {
      // A call that already holds what making the agent needs (the tail of the company's activity
      // chain, which a kernel capability writing activity in the call's transaction takes; a
      // plugin's own entries wait for its COMMIT and hold nothing) would wait for this forever:
      // such a wait ends in a clear refusal instead.
      await tx.exec(`set local lock_timeout = '${PROVISION_LOCK_TIMEOUT_MS}ms'`);
      // A company being archived or deleted gets nothing new.
      const company = await tx.maybeOne<{ status: string }>('select status from companies where id = ? for share', [companyId]);
      if (!company || company.status === 'archived') throw new KeelError(409, 'company_not_active', 'The company is archived; no agent is made for it');
      await provisionCompany(tx, kernel, plugin, [spec], companyId);
      return (await tx.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where company_id = ? and managed_by_plugin = ? and managed_key = ?`, [companyId, plugin, key]))!;
    });
  } catch (error) {
    if ((error as { code?: string }).code !== '55P03') throw error;
    throw new KeelError(409, 'managed_agent_busy',
      `The managed agent "${key}" could not be made: the call holds the company's activity log (a kernel capability it called wrote activity before asking). Ask for the agent first, or in a call of its own`);
  }
}

/** How long making an on-demand agent waits for a lock before it refuses (see provisionOnDemand). */
const PROVISION_LOCK_TIMEOUT_MS = 5_000;

/** Makes the plugin's managed agents of one company that do not exist yet; answers how many it made. */
async function provisionCompany(tx: Tx, kernel: Pick<KernelServices, 'activity' | 'events'>, plugin: string, agents: ManagedAgentManifest[], companyId: string): Promise<number> {
  let made = 0;
  for (const spec of agents) {
    const existing = await tx.maybeOne('select id from agents where company_id = ? and managed_by_plugin = ? and managed_key = ?', [companyId, plugin, spec.key]);
    if (existing) continue;
    await lockCompanyShortnames(tx, companyId);
    // An agent of the company with the same name is left alone: the managed one gets a numbered name.
    const { name, urlKey } = await uniqueNameForCreate(tx, companyId, spec.name);
    const agent = await tx.maybeOne<AgentRow>(
      `insert into agents (company_id, name, url_key, role, title, capabilities, adapter_type, status, pause_reason, paused_at, managed_by_plugin, managed_key)
       values (?, ?, ?, ?, ?, ?, ?, 'paused', '${MANAGED_PAUSE_REASON}', now(), ?, ?)
       on conflict (company_id, managed_by_plugin, managed_key) where managed_by_plugin is not null do nothing returning ${AGENT_WITH_SPEND}`,
      [companyId, name, urlKey, spec.role ?? 'general', spec.title ?? null, spec.capabilities ?? null, spec.adapterType ?? 'process', plugin, spec.key]);
    if (!agent) continue;
    // Paused by the board's own kind of hold until the board approves or writes its configuration:
    // a plugin's enable and disable move only their own hold, never this one.
    await placeOperatorHold(tx, companyId, 'agent', agent.id, MANAGED_PAUSE_REASON);
    // A revision with neither user nor agent: the executor refuses to run it until the board writes its configuration.
    await recordRevision(tx, { agent, source: 'create', changedKeys: CONFIG_FIELDS, userId: null, agentId: null });
    await kernel.activity.record(tx, {
      companyId, ...ACTOR(plugin), action: 'agent.created', entityType: 'agent', entityId: agent.id, agentId: agent.id,
      details: { name: agent.name, role: agent.role, adapterType: agent.adapter_type, status: agent.status, managedBy: { plugin, key: spec.key } },
    });
    await kernel.events.emit(tx, 'agent.created', { companyId, agentId: agent.id, agent: eventAgent(agent), actor: ACTOR(plugin) });
    made++;
  }
  return made;
}

/** On enable (and an upgrade of an enabled plugin), in its transaction: every company that is not archived. */
export async function provisionAllCompanies(tx: Tx, kernel: KernelServices, plugin: string, manifest: PluginManifest, granted: readonly string[]): Promise<number> {
  if (!provisions(manifest, granted)) return 0;
  await tx.query(`select pg_advisory_xact_lock(${LOCK})`);
  const companies = await tx.query<{ id: string }>("select id from companies where status <> 'archived' order by created_at, id");
  let made = 0;
  for (const company of companies) made += await provisionCompany(tx, kernel, plugin, managedAgentsOf(manifest), company.id);
  return made;
}

/** In a new company's creating transaction: the managed agents of every enabled plugin that declares them. */
export async function provisionNewCompany(tx: Tx, kernel: KernelServices, companyId: string): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock_shared(${LOCK})`);
  const plugins = await tx.query<{ key: string; manifest: PluginManifest; granted_capabilities: string[] | null }>(
    "select key, manifest, granted_capabilities from plugins where status = 'enabled' order by key");
  for (const row of plugins) {
    if (provisions(row.manifest, row.granted_capabilities)) await provisionCompany(tx, kernel, row.key, managedAgentsOf(row.manifest), companyId);
  }
}

/**
 * Places (disable) or lifts (enable) the plugin's own hold on each of its managed agents, with
 * the status event and activity entry of every agent whose status changed. Lifting removes only
 * this plugin's `plugin_disabled` hold: an agent the board paused stays paused.
 */
export async function holdManagedAgents(tx: Tx, kernel: KernelServices, plugin: string, held: boolean): Promise<void> {
  const agents = await tx.query<{ id: string; company_id: string }>(
    'select id, company_id from agents where managed_by_plugin = ? order by company_id, id', [plugin]);
  for (const agent of agents) {
    const answer = await tx.maybeOne<{ answer: { change?: { from: string; to: string } | null } }>(
      'select keel_private.change_hold(?, ?, ?, ?, ?, ?) as answer', [agent.company_id, 'agent', agent.id, `plugin:${plugin}`, DISABLED_HOLD_REASON, held]);
    const change = answer?.answer.change;
    if (!change) continue;
    await kernel.invalidate(tx, { type: 'agent', id: agent.id });
    await kernel.activity.record(tx, {
      companyId: agent.company_id, ...ACTOR(plugin), action: held ? 'agent.paused' : 'agent.resumed', entityType: 'agent', entityId: agent.id, agentId: agent.id,
      details: { from: change.from, to: change.to, reason: DISABLED_HOLD_REASON, plugin },
    });
    await kernel.events.emit(tx, 'agent.status_changed', {
      companyId: agent.company_id, agentId: agent.id, from: change.from, to: change.to, reason: held ? DISABLED_HOLD_REASON : null, actor: ACTOR(plugin),
    });
  }
}
