import { definePlugin } from './plugin.gen.ts';

interface Assigned { taskId: string; assignee: string; previous: string | null }

export default definePlugin({
  routes: {
    /** The assignment and its event commit together: if either fails, neither happened. */
    assign: async (request, ctx) => {
      const taskId = request.params.taskId!;
      const { assignee } = request.body as { assignee: string };
      const { rows } = await ctx.db.query<{ previous: string | null }>(
        `insert into assignments as a (company_id, task_id, assignee) values ($1, $2, $3)
           on conflict (company_id, task_id) do update set assignee = excluded.assignee
         returning (select assignee from assignments where company_id = $1 and task_id = $2) as previous`,
        [request.companyId, taskId, assignee]);
      const payload: Assigned = { taskId, assignee, previous: rows[0]?.previous ?? null };
      const { eventId } = await ctx.events.publish('task-assignments.task.assigned', payload, { entityType: 'task', entityId: taskId });
      return { taskId, assignee, eventId };
    },
    notifications: async (request, ctx) => {
      const { rows } = await ctx.db.query('select event_id, task_id, message from notifications where company_id = $1 order by received_at', [request.companyId]);
      return { notifications: rows };
    },
  },
  events: {
    /** At least once, in order per task: idempotent by the event id. */
    'task-assignments.task.assigned': async (payload, ctx) => {
      const event = ctx.invocation.event!;
      // Typed from plugin.json's schema of the event (src/plugin.gen.ts), as the publish above is.
      await ctx.db.query(
        'insert into notifications (event_id, company_id, task_id, message) values ($1, $2, $3, $4) on conflict (event_id) do nothing',
        [event.id, event.companyId, payload.taskId, `${payload.taskId} is now ${payload.assignee}'s${payload.previous ? ` (was ${payload.previous}'s)` : ''}`]);
    },
  },
});
