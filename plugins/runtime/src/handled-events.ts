import type { RuntimeContext } from './context.ts';

/**
 * Durable events arrive at least once: an event's id is recorded in the transaction of its
 * effects, so a redelivery (after a crash or a timeout) finds it and changes nothing.
 */
export async function firstDelivery(ctx: RuntimeContext): Promise<boolean> {
  const id = ctx.invocation.event?.id;
  if (!id) return true;
  const { rows } = await ctx.db.query('insert into handled_events (event_id) values ($1) on conflict do nothing returning 1', [id]);
  return rows.length > 0;
}
