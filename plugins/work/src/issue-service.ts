import type { WorkContext } from './context.ts';

/**
 * The `issue` service: what the agent runtime needs to bind a wakeup's run to an issue of the
 * calling company (an issue of another company does not exist for it; a hidden one, the
 * platform's own task such as a summary generation, does: its assignee is woken on it): its
 * status, assignee and project, and whether that project is paused (and why).
 */
export async function issueService(input: unknown, ctx: WorkContext) {
  const { issueId } = input as { issueId: string };
  const { rows } = await ctx.db.query(
    `select i.status, i.assignee_agent_id, i.project_id, p.paused_at, p.pause_reason
       from issues i left join projects p on p.id = i.project_id
      where i.id = $1 and i.company_id = $2`,
    [issueId, ctx.invocation.companyId]);
  const row = rows[0];
  if (!row) return { exists: false, status: null, assigneeAgentId: null, projectId: null, projectPaused: false, projectPauseReason: null };
  return {
    exists: true, status: row.status, assigneeAgentId: row.assignee_agent_id ?? null, projectId: row.project_id ?? null,
    projectPaused: row.paused_at !== null && row.paused_at !== undefined, projectPauseReason: row.pause_reason ?? null,
  };
}
