import type { AgentConfigView } from '@keel/sdk/plugin';
import { enqueuedPayload, errorStatus, type Row, type RuntimeContext } from './context.ts';
import type { JobPayload } from './plugin.gen.ts';
import { rearmLostRoutines } from './routines.ts';
import { dispatch } from './dispatch.ts';
import { nextSlotOf, slotDueMs } from './slots.ts';
import { wake } from './wakeups.ts';

const MAX_INTERVAL_SEC = 30 * 24 * 3600;

/** `runtimeConfig.heartbeat`: enabled (default false) and intervalSec (a whole number of seconds, at least 1). */
function heartbeatInterval(runtimeConfig: Record<string, unknown>): number | null {
  const heartbeat = runtimeConfig.heartbeat as Record<string, unknown> | undefined;
  if (!heartbeat || heartbeat.enabled !== true) return null;
  const interval = heartbeat.intervalSec;
  return typeof interval === 'number' && Number.isInteger(interval) && interval >= 1 && interval <= MAX_INTERVAL_SEC ? interval : null;
}

const nowSec = () => Math.floor(Date.now() / 1000);

async function enqueueSlot(ctx: RuntimeContext, agentId: string, intervalSec: number, slot: number): Promise<void> {
  await ctx.jobs.enqueue('heartbeat', { agentId, slot, intervalSec }, {
    runAt: new Date(slotDueMs(agentId, intervalSec, slot)).toISOString(), singletonKey: `hb-${agentId}-${intervalSec}-${slot}`,
  });
}

/** Agents whose timer is not armed: nothing may wake them on a heartbeat until their status changes. */
const RESTING = new Set(['terminated', 'paused', 'pending_approval']);

/**
 * Keeps an agent's timer in step with its configuration and status: armed (its next slot's job
 * queued) while the heartbeat is enabled and the agent can run, removed otherwise. A paused
 * agent's timer is removed rather than left to fire refused wakes every interval (a job each,
 * for nothing: a fleet paused by a budget stop would keep the queue busy); its resume arms it
 * again from the next slot (agent.status_changed). A timer whose chain of jobs was lost (its
 * next slot long past) is armed again; a live chain is left alone.
 */
export async function syncTimer(ctx: RuntimeContext, agentId: string, known?: AgentConfigView | null): Promise<void> {
  const agent = known === undefined ? await ctx.agents.getConfig(agentId) : known;
  const interval = configuredInterval(agent);
  if (interval === null) {
    await ctx.db.query('delete from heartbeat_timers where agent_id = $1', [agentId]);
    return;
  }
  // Read without a lock: a lock held to the end of the sweep's transaction (which syncs many
  // agents) made every heartbeat of the company that fell due meanwhile wait for the whole sweep.
  // A live chain is left alone; re-arming one that just came alive is harmless (its slot's job is
  // a singleton, and a slot fires once under the claim in heartbeatJob).
  const { rows } = await ctx.db.query('select interval_sec, next_slot from heartbeat_timers where agent_id = $1', [agentId]);
  const timer = rows[0];
  if (timer && Number(timer.interval_sec) === interval && chainAlive(timer)) return;
  const next = nextSlotOf(agentId, interval);
  await ctx.db.query(
    `insert into heartbeat_timers (agent_id, company_id, interval_sec, last_slot, next_slot) values ($1, $2, $3, 0, $4)
     on conflict (agent_id) do update set interval_sec = excluded.interval_sec, next_slot = excluded.next_slot,
       last_slot = case when heartbeat_timers.interval_sec = excluded.interval_sec then heartbeat_timers.last_slot else 0 end, updated_at = clock_timestamp()`,
    [agentId, ctx.invocation.companyId, interval, next]);
  await enqueueSlot(ctx, agentId, interval, next);
}

/** The interval an agent's timer should run at: null while the heartbeat is off or the agent rests (or is gone). */
function configuredInterval(agent: AgentConfigView | null): number | null {
  return agent && !RESTING.has(String(agent.status)) ? heartbeatInterval(agent.runtimeConfig) : null;
}

/** Whether a timer's chain of jobs goes on: its next slot not long past (a lost chain's is). */
function chainAlive(timer: Row): boolean {
  const interval = Number(timer.interval_sec);
  return Number(timer.next_slot) * interval >= nowSec() - 2 * interval - 60;
}

/**
 * The `heartbeat` job: fires one slot. Claiming the slot under the timer's row lock makes it
 * fire once across every Keel process, however often its job was queued; a job of an interval
 * since changed finds no timer to claim. The wake is a `timer` wakeup, which coalesces into a
 * run already active instead of queueing behind it; a refused wake (agent paused, budget
 * stop) skips this slot and the timer goes on.
 *
 * A run the wake queued is started here, in this job, under the agent-state lock the wake took:
 * a second job per run (start-runs) doubled the queue's work per heartbeat and, fetched after the
 * heartbeats due before it, waited behind them (test/bench/fleet.bench.ts). A run this pass
 * cannot start yet stays queued, as after a start-runs pass: the end of a run of the agent starts
 * it, or (its environment's leases taken) the start-runs job waitForLease queues.
 */
export async function heartbeatJob(ctx: RuntimeContext, payload: JobPayload<'heartbeat'>): Promise<void> {
  const { agentId, slot, intervalSec } = enqueuedPayload('heartbeat', payload);
  const { rows } = await ctx.db.query(
    `update heartbeat_timers set last_slot = $2, next_slot = greatest($2 + 1, $4), updated_at = clock_timestamp()
      where agent_id = $1 and interval_sec = $3 and last_slot < $2 returning next_slot`,
    [agentId, slot, intervalSec, nextSlotOf(agentId, intervalSec)]);
  if (!rows[0]) return;
  // The agent's configuration, read once for the slot, its wake and its start. A timer whose
  // heartbeat was turned off or re-timed, or whose agent came to rest, without this plugin hearing
  // of it (its events not delivered) is put in step here and this slot wakes nobody: so the
  // minute's sweep need not read the configuration of agents whose chain is alive.
  const agent = await ctx.agents.getConfig(agentId);
  if (configuredInterval(agent) !== intervalSec) {
    await syncTimer(ctx, agentId, agent);
    return;
  }
  await enqueueSlot(ctx, agentId, intervalSec, Number(rows[0].next_slot));
  let queued = false;
  // The run this wake created: its start goes unannounced on its stream, where nobody can listen yet.
  let created: string | undefined;
  try {
    const woken = await wake(ctx, agentId, { source: 'timer', triggerDetail: 'system', reason: 'heartbeat_timer', idempotencyKey: `timer-${intervalSec}-${slot}` }, { startInCall: true, agent: agent! });
    queued = woken.status === 'queued';
    if (queued && !woken.replayed && woken.run) created = String(woken.run.id);
  } catch (error) {
    if (errorStatus(error) >= 500) throw error;
    ctx.log.info('heartbeat wake refused', { agentId, slot, code: (error as { code?: string }).code ?? null });
  }
  // Outside the try: a failed start rolls the whole slot back, and the job's retry fires it again.
  if (queued) await dispatch(ctx, agentId, agent, created);
}

export async function onAgentConfigChanged(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (typeof payload.agentId === 'string') await syncTimer(ctx, payload.agentId);
}

/**
 * Every minute, per company: arms the timers of agents configured while events were not
 * delivered, and those whose chain was lost; and lost routine chains. An agent whose chain is
 * alive is left to its next slot, which checks its configuration (heartbeatJob): the sweep reads
 * the configuration only of the others, not of every agent every minute.
 */
export async function heartbeatSweepJob(ctx: RuntimeContext): Promise<void> {
  const agents = await ctx.agents.list();
  const { rows } = await ctx.db.query('select agent_id, interval_sec, next_slot from heartbeat_timers where company_id = $1', [ctx.invocation.companyId]);
  const alive = new Set(rows.filter(chainAlive).map((timer) => String(timer.agent_id)));
  for (const agent of agents) {
    if (alive.has(String(agent.id)) && !RESTING.has(String(agent.status))) continue;
    await syncTimer(ctx, String(agent.id));
  }
  await rearmLostRoutines(ctx);
}
