import type { RuntimeContext } from './context.ts';

type ActivityEntry = Parameters<RuntimeContext['activity']['record']>[0];

/**
 * Activity entries of a call, written at its end. Appending to a company's activity chain
 * locks the chain's head until the writing transaction commits, and the kernel calls this
 * plugin makes mid-call (opening and closing ledger runs, cancelling executions, the costs
 * plugin's services) append to the same chain from their own transactions: an entry written
 * before such a call would make the call wait for this transaction, which waits for the call.
 * So entries are kept and written after the last kernel call, still inside the transaction.
 */
const pending = new WeakMap<object, ActivityEntry[]>();

export function recordActivity(ctx: RuntimeContext, entry: ActivityEntry): void {
  const entries = pending.get(ctx) ?? [];
  entries.push(entry);
  pending.set(ctx, entries);
}

async function flush(ctx: RuntimeContext): Promise<void> {
  const entries = pending.get(ctx);
  pending.delete(ctx);
  for (const entry of entries ?? []) await ctx.activity.record(entry);
}

/** A route, event or service handler (ctx second) whose activity is written when it ends. */
export function withActivity<A, R>(handler: (input: A, ctx: RuntimeContext) => Promise<R>) {
  return async (input: A, ctx: RuntimeContext): Promise<R> => {
    const answer = await handler(input, ctx);
    await flush(ctx);
    return answer;
  };
}

/** A job handler (ctx first) whose activity is written when it ends. */
export function jobWithActivity<Payload>(handler: (ctx: RuntimeContext, payload: Payload) => Promise<void>) {
  return async (ctx: RuntimeContext, payload: Payload): Promise<void> => {
    await handler(ctx, payload);
    await flush(ctx);
  };
}
