import { createHash } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';

export interface KeyedServiceCall {
  provider: string;
  service: string;
  caller: string;
  companyId: string | null;
  idempotencyKey: string;
  input: unknown;
  /** A claim older than this belongs to a call whose process died: it may be taken over. */
  staleAfterMs: number;
}

/**
 * At most one run of a service per idempotency key, across Keel processes. The first call
 * claims the key (a row in keel_host.service_calls), runs the service and stores the result;
 * a retry with the same key and input answers the stored result; the same key with another
 * input answers 409 `idempotency_key_reused`; a retry while the first run is still going
 * answers 409 `service_call_in_progress`. A run that fails releases its claim, so the call can
 * be retried; a claim left by a process that died is taken over once it is stale. Results are
 * kept for a day.
 */
export class IdempotentServiceCalls {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  async once(call: KeyedServiceCall, run: () => Promise<unknown>): Promise<unknown> {
    const key = [call.provider, call.service, call.caller, call.companyId ?? '', call.idempotencyKey];
    const inputHash = createHash('sha256').update(JSON.stringify(call.input ?? null)).digest('hex');
    const claimed = await this.db.maybeOne(
      `insert into keel_host.service_calls (provider, service, caller, company_key, idempotency_key, input_hash, status)
       values (?, ?, ?, ?, ?, ?, 'running') on conflict do nothing returning claimed_at`, [...key, inputHash]);
    if (!claimed) {
      const existing = await this.db.maybeOne<{ input_hash: string; status: string; result: unknown; stale: boolean; claimed_at: unknown }>(
        `select input_hash, status, result, claimed_at::text as claimed_at, claimed_at < now() - make_interval(secs => ?) as stale from keel_host.service_calls
          where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ?`, [call.staleAfterMs / 1000, ...key]);
      if (!existing) return this.once(call, run);
      if (existing.input_hash !== inputHash) {
        throw new KeelError(409, 'idempotency_key_reused', `Idempotency key ${call.idempotencyKey} was used for another input of ${call.provider}.${call.service}`);
      }
      if (existing.status === 'done') return existing.result ?? null;
      const takenOver = existing.stale && await this.db.exec(
        `update keel_host.service_calls set claimed_at = now() where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ?
           and status = 'running' and claimed_at = ?::timestamptz`, [...key, existing.claimed_at]);
      if (!takenOver) throw new KeelError(409, 'service_call_in_progress', `A call of ${call.provider}.${call.service} with idempotency key ${call.idempotencyKey} is still running; retry later`);
    }
    let result: unknown;
    try {
      result = await run();
    } catch (error) {
      await this.db.exec(
        `delete from keel_host.service_calls where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ? and status = 'running'`, key);
      throw error;
    }
    await this.db.exec(
      `update keel_host.service_calls set status = 'done', result = ?::jsonb, completed_at = now()
        where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ?`, [JSON.stringify(result ?? null), ...key]);
    // Keys are remembered for a day: now and then, one completion clears what is older.
    if (Math.random() < 0.01) await this.db.exec("delete from keel_host.service_calls where status = 'done' and completed_at < now() - interval '1 day'");
    return result;
  }
}

export interface KeyedCreate<T> {
  /** What kind of entity the key creates (`company`, `agent`, ...). */
  kind: string;
  /** Who asks (`user:<id>`, `agent:<id>`): keys are kept per actor and company. */
  actorKey: string;
  companyId: string | null;
  idempotencyKey: string | null;
  /** The request as a retry repeats it (path parameters and body). */
  request: unknown;
  /** Performs the create in `tx`; answers the route's body and the new entity's id. */
  create: () => Promise<{ id: string; answer: T }>;
  /** The entity the key made, as the route answers it now (null when it is gone). */
  load: (id: string) => Promise<T | null>;
}

/**
 * The same keys for a create the kernel serves itself, kept in keel_host.service_calls under
 * provider `keel:create`, but claimed inside the create's own transaction and completed with
 * the new entity's id before its commit: the key and the entity commit together or not at
 * all, so a process killed in between leaves nothing to take over. A concurrent request with
 * the same key (in any process) waits on the claim's primary key until the first commits,
 * then finds it done: the same request answers the entity it made (`replayed`) and writes
 * nothing; another request under the key is 409 `idempotency_key_reused`. No key: just creates.
 */
export async function createOnceIn<T>(tx: Queryable, input: KeyedCreate<T>): Promise<{ answer: T; replayed: boolean }> {
  if (input.idempotencyKey === null) return { answer: (await input.create()).answer, replayed: false };
  const key = ['keel:create', input.kind, input.actorKey, input.companyId ?? '', input.idempotencyKey];
  const inputHash = createHash('sha256').update(JSON.stringify(input.request ?? null)).digest('hex');
  const claimed = await tx.maybeOne(
    `insert into keel_host.service_calls (provider, service, caller, company_key, idempotency_key, input_hash, status)
     values (?, ?, ?, ?, ?, ?, 'running') on conflict do nothing returning claimed_at`, [...key, inputHash]);
  if (!claimed) {
    const stored = await tx.maybeOne<{ input_hash: string; result: { id?: string } | null }>(
      `select input_hash, result from keel_host.service_calls
        where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ?`, key);
    if (!stored?.result?.id) throw new KeelError(409, 'idempotency_conflict', 'A request with this Idempotency-Key is still being processed; retry it');
    if (stored.input_hash !== inputHash) throw new KeelError(409, 'idempotency_key_reused', `This Idempotency-Key was already used for a different ${input.kind} request`);
    const answer = await input.load(stored.result.id);
    if (answer === null) throw new KeelError(404, 'not_found', `The ${input.kind} this Idempotency-Key created no longer exists`);
    return { answer, replayed: true };
  }
  const made = await input.create();
  await tx.exec(
    `update keel_host.service_calls set status = 'done', result = ?::jsonb, completed_at = now()
      where provider = ? and service = ? and caller = ? and company_key = ? and idempotency_key = ?`, [JSON.stringify({ id: made.id }), ...key]);
  return { answer: made.answer, replayed: false };
}
