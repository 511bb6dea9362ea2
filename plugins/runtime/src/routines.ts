import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { recordActivity } from './activity.ts';
import { enqueuedPayload, errorStatus, type RuntimeContext } from './context.ts';
import type { JobPayload } from './plugin.gen.ts';
import { dispatch } from './dispatch.ts';
import { nextSlotOf, slotDueMs } from './slots.ts';
import { wake } from './wakeups.ts';

type Row = Record<string, unknown>;
const iso = (value: unknown) => (value === null || value === undefined ? null : new Date(String(value)).toISOString());

export function routineJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, key: row.key, title: row.title, agentId: row.agent_id, intervalSec: Number(row.interval_sec),
    status: row.status, managedBy: { plugin: row.managed_by_plugin, key: row.key },
    lastFiredAt: iso(row.last_fired_at), createdAt: iso(row.created_at), updatedAt: iso(row.updated_at),
  };
}

async function enqueueSlot(ctx: RuntimeContext, routineId: string, intervalSec: number, slot: number): Promise<void> {
  await ctx.jobs.enqueue('routine', { routineId, slot, intervalSec }, {
    runAt: new Date(slotDueMs(routineId, intervalSec, slot)).toISOString(), singletonKey: `routine-${routineId}-${intervalSec}-${slot}`,
  });
}

/**
 * Arms an active routine: its next slot's job queued (the slot is claimed when it fires, so a second
 * arm fires nothing twice). Slots are spread over the interval by the routine's id, as heartbeats
 * are by the agent's (slots.ts), so routines of one interval do not all fire in the same second.
 */
async function arm(ctx: RuntimeContext, row: Row): Promise<void> {
  const interval = Number(row.interval_sec);
  const next = nextSlotOf(String(row.id), interval);
  await ctx.db.query('update routines set next_slot = $2, updated_at = clock_timestamp() where id = $1', [row.id, next]);
  await enqueueSlot(ctx, String(row.id), interval, next);
}

/**
 * Service `managed-routine` (callers granted `routines.managed`): the calling plugin's routine
 * `key` in the calling company, made paused the first time; later calls answer it as the board
 * left it. Its agent must be one the calling plugin manages (managedBy), never another agent.
 */
export async function managedRoutineService(input: unknown, ctx: RuntimeContext) {
  const body = input as { key: string; agentId: string; title: string; intervalSec: number };
  const plugin = ctx.invocation.caller?.plugin;
  if (!plugin) throw new PluginError(403, 'plugin_caller_required', 'Only a plugin can ask for a routine it manages.');
  const companyId = ctx.invocation.companyId!;
  const agent = await ctx.agents.get(body.agentId);
  const managedBy = agent?.managedBy as { plugin?: string } | null | undefined;
  if (!agent || managedBy?.plugin !== plugin) {
    throw new PluginError(422, 'agent_not_managed', `agentId names no agent of the company that ${plugin} manages`, { field: 'agentId' });
  }
  const { rows } = await ctx.db.query(
    `insert into routines (company_id, key, managed_by_plugin, agent_id, title, interval_sec) values ($1, $2, $3, $4, $5, $6)
     on conflict (company_id, managed_by_plugin, key) do nothing returning *`,
    [companyId, body.key, plugin, body.agentId, body.title, body.intervalSec]);
  if (rows[0]) {
    recordActivity(ctx, { action: 'routine.created', entityType: 'routine', entityId: String(rows[0].id), details: { key: body.key, plugin, agentId: body.agentId, intervalSec: body.intervalSec, status: 'paused' } });
    return { routine: routineJson(rows[0]), created: true };
  }
  const existing = await ctx.db.query('select * from routines where company_id = $1 and managed_by_plugin = $2 and key = $3', [companyId, plugin, body.key]);
  return { routine: routineJson(existing.rows[0]!), created: false };
}

/** GET /api/companies/{companyId}/routines: the company's routines, oldest first. */
export async function listRoutinesRoute(req: RouteRequest, ctx: RuntimeContext) {
  const { rows } = await ctx.db.query('select * from routines where company_id = $1 order by created_at, id', [req.companyId]);
  return { routines: rows.map(routineJson) };
}

/** PATCH /api/routines/{routineId} {status}: board only. Resuming arms its next slot; pausing lets the queued slot find it paused. */
export async function patchRoutineRoute(req: RouteRequest, ctx: RuntimeContext) {
  const actor = await ctx.principals.actor([]);
  if (actor.type !== 'board') throw new PluginError(403, 'board_only', 'Only board operators can pause or resume routines.');
  const { status } = req.body as { status: 'paused' | 'active' };
  const { rows } = await ctx.db.query('select * from routines where id = $1 for update', [req.params.routineId]);
  const before = rows[0]!;
  if (before.status === status) return routineJson(before);
  const updated = (await ctx.db.query('update routines set status = $2, updated_at = clock_timestamp() where id = $1 returning *', [before.id, status])).rows[0]!;
  if (status === 'active') await arm(ctx, updated);
  recordActivity(ctx, { action: status === 'active' ? 'routine.resumed' : 'routine.paused', entityType: 'routine', entityId: String(before.id), details: { key: before.key, from: before.status, to: status } });
  return routineJson((await ctx.db.query('select * from routines where id = $1', [before.id])).rows[0]!);
}

/**
 * The `routine` job: fires one slot of an active routine. Claiming the slot under the row lock
 * (last_slot < slot) makes it fire once across every process; a paused routine, or one whose
 * interval changed, claims nothing. The wake is a `timer` wakeup with the routine's key as reason;
 * a refused wake (its agent paused, for instance by its plugin's disable) skips the slot. A run
 * the wake queued is started in this job, as a heartbeat's is (heartbeats.ts).
 */
export async function routineJob(ctx: RuntimeContext, payload: JobPayload<'routine'>): Promise<void> {
  const { routineId, slot, intervalSec } = enqueuedPayload('routine', payload);
  const { rows } = await ctx.db.query(
    `update routines set last_slot = $2, next_slot = greatest($2 + 1, $4), last_fired_at = clock_timestamp(), updated_at = clock_timestamp()
      where id = $1 and status = 'active' and interval_sec = $3 and last_slot < $2 returning *`,
    [routineId, slot, intervalSec, nextSlotOf(routineId, intervalSec)]);
  const routine = rows[0];
  if (!routine) return;
  await enqueueSlot(ctx, routineId, intervalSec, Number(routine.next_slot));
  let queued = false;
  try {
    const woken = await wake(ctx, String(routine.agent_id), {
      source: 'timer', triggerDetail: 'system', reason: `routine:${String(routine.key)}`, idempotencyKey: `routine-${routineId}-${slot}`,
      payload: { routineId, routineKey: routine.key },
    }, { startInCall: true });
    queued = woken.status === 'queued';
  } catch (error) {
    if (errorStatus(error) >= 500) throw error;
    ctx.log.info('routine wake refused', { routineId, slot, code: (error as { code?: string }).code ?? null });
  }
  if (queued) await dispatch(ctx, String(routine.agent_id));
}

/** Part of the per-company sweep: active routines whose chain of slot jobs was lost are armed again. */
export async function rearmLostRoutines(ctx: RuntimeContext): Promise<void> {
  const { rows } = await ctx.db.query(
    `select * from routines where company_id = $1 and status = 'active'
        and (next_slot is null or next_slot * interval_sec < extract(epoch from now()) - 2 * interval_sec - 60) for update`, [ctx.invocation.companyId]);
  for (const row of rows) await arm(ctx, row);
}
