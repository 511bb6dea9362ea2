import type { Context } from 'koa';
import type { Actor } from '../auth/actor.ts';
import type { Queryable } from '../db/database.ts';
import { createOnceIn } from '../host/service-calls.ts';
import { idempotencyKeyOf } from './idempotency-key.ts';

export interface RouteCreate<T> {
  kind: string;
  companyId: string | null;
  /** The request as a retry repeats it (path parameters and body). */
  request: unknown;
  create: () => Promise<{ id: string; answer: T }>;
  load: (id: string) => Promise<T | null>;
}

/** Keys are kept per actor (and company): one caller's key never answers another's create. */
function actorKey(actor: Actor): string {
  if (actor.kind === 'agent') return `agent:${actor.agentId}`;
  if (actor.kind === 'board') return `user:${actor.userId}`;
  return 'anonymous';
}

/**
 * A kernel create under the request's Idempotency-Key (createOnceIn), inside `tx`: answers
 * 201 with what it created, or 200 with `x-idempotent-replayed: true` and what the key made
 * before (writing nothing, no activity entry either), as the plugins' creates do.
 */
export async function createOnceForRequest<T>(ctx: Context, tx: Queryable, input: RouteCreate<T>): Promise<T> {
  const actor = ctx.state.actor as Actor;
  const { answer, replayed } = await createOnceIn(tx, { ...input, actorKey: actorKey(actor), idempotencyKey: idempotencyKeyOf(ctx) });
  if (replayed) {
    ctx.status = 200;
    ctx.set('x-idempotent-replayed', 'true');
    // A replay changed nothing: no activity entry, not even the audit safety net's.
    ctx.state.skipAudit = true;
  } else {
    ctx.status = 201;
  }
  return answer;
}
