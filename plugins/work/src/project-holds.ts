import { costsEvents, PluginError, type PayloadOf } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';

/**
 * Holds on projects (migration 0004). The costs plugin announces a project's budget hard stop
 * and its lifting as durable events; each becomes a hold of holder `costs` keyed by reason,
 * placed or lifted in this plugin's transaction. Deliveries come at least once: placing and
 * lifting the same hold twice changes nothing the second time.
 */
export async function changeProjectHold(ctx: WorkContext, companyId: string, projectId: string, holder: string, reason: string, held: boolean): Promise<void> {
  const { rows } = await ctx.db.query('select id, paused_at from projects where id = $1 and company_id = $2 for no key update', [projectId, companyId]);
  if (!rows[0]) return;
  if (held) {
    const placed = await ctx.db.query(
      'insert into project_holds (company_id, project_id, holder, reason) values ($1, $2, $3, $4) on conflict do nothing returning 1',
      [companyId, projectId, holder, reason]);
    if (placed.rows.length === 0) return;
    if (rows[0].paused_at === null) {
      await ctx.db.query('update projects set paused_at = now(), pause_reason = $2, updated_at = now() where id = $1', [projectId, reason]);
      await ctx.activity.record({ action: 'project.paused', entityType: 'project', entityId: projectId, details: { holder, reason } });
    }
    return;
  }
  const lifted = await ctx.db.query('delete from project_holds where project_id = $1 and holder = $2 and reason = $3 returning 1', [projectId, holder, reason]);
  if (lifted.rows.length === 0) return;
  const { rows: left } = await ctx.db.query('select reason from project_holds where project_id = $1 order by created_at, reason limit 1', [projectId]);
  if (left[0]) {
    await ctx.db.query('update projects set pause_reason = $2 where id = $1', [projectId, left[0].reason]);
    return;
  }
  await ctx.db.query('update projects set paused_at = null, pause_reason = null, updated_at = now() where id = $1', [projectId]);
  await ctx.activity.record({ action: 'project.resumed', entityType: 'project', entityId: projectId, details: { holder, reason } });
}

/** New work in a paused project is refused: 409 naming the project and why it is paused. */
export async function assertProjectTakesWork(ctx: WorkContext, companyId: string, projectId: unknown): Promise<void> {
  if (projectId === undefined || projectId === null) return;
  const { rows } = await ctx.db.query('select pause_reason from projects where id = $1 and company_id = $2 and paused_at is not null', [projectId, companyId]);
  if (rows[0]) {
    throw new PluginError(409, 'project_paused', `The project is paused (${rows[0].pause_reason}); it takes no new work until it is resumed`, { projectId, pauseReason: rows[0].pause_reason });
  }
}

/** Both events carry the same payload (sdk/events/costs-events.ts). */
type BudgetStop = PayloadOf<typeof costsEvents.budgetStopped> & PayloadOf<typeof costsEvents.budgetResumed>;

/** costs.budget.stopped / costs.budget.resumed: a project's hard stop placed or lifted. */
export function onBudgetStop(held: boolean) {
  return async (stop: BudgetStop, ctx: WorkContext): Promise<void> => {
    const companyId = ctx.invocation.companyId;
    if (stop.scopeType !== 'project' || !companyId) return;
    await changeProjectHold(ctx, companyId, stop.scopeId, 'costs', stop.reason, held);
  };
}

/** The `project` service: whether a project of the calling company exists, for the costs plugin's project policies. */
export async function projectService(input: unknown, ctx: WorkContext) {
  const { projectId } = input as { projectId: string };
  const { rows } = await ctx.db.query('select status, paused_at from projects where id = $1 and company_id = $2', [projectId, ctx.invocation.companyId]);
  return rows[0] ? { exists: true, status: rows[0].status, paused: rows[0].paused_at !== null } : { exists: false, status: null, paused: false };
}
