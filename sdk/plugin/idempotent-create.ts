import type { DatabaseCapability } from '../capabilities/database.ts';
import { PluginError } from './errors.ts';
import { fingerprint } from './fingerprint.ts';

/** What a create answers; `respond(201, entity)` or the entity itself. */
type Answer = unknown;

export interface KeyedCreate {
  /** The `Idempotency-Key` request header (the kernel checked it: 1-255 visible ASCII characters), or undefined. */
  key: string | undefined;
  companyId: string;
  /** What kind of entity the key creates: keys are unique per company and kind. */
  kind: string;
  /** The request as a retry repeats it (path parameters and body): same key, other request is 409. */
  request: unknown;
  /** Performs the create; answers what the route answers and the new entity's id. */
  create: () => Promise<{ id: string; answer: Answer }>;
  /** The entity a key made, as the route answers it now; null when it is gone. */
  load: (id: string) => Promise<unknown>;
  /** The status a replay answers (default 200, as a retried issue create always has). */
  replayStatus?: number;
}

/**
 * A create a client may retry after a lost answer. The key is claimed first, in the route's
 * own transaction, in the plugin's table
 * `idempotency_keys (company_id uuid, kind text, key text, entity_id uuid, fingerprint text,
 * created_at timestamptz, primary key (company_id, kind, key))`, and bound to the new entity
 * before the commit: so the key and the entity commit together or not at all. A concurrent
 * request with the same key (in this process or another) waits on the claim's unique index
 * until the first commits, then finds the key: a retry with the same request answers the
 * entity the key made (`x-idempotent-replayed: true`) without writing anything; another
 * request under the key is 409 `idempotency_key_reused`. Without a key, the create just runs.
 */
export async function createOnce(db: DatabaseCapability, input: KeyedCreate): Promise<Answer> {
  if (input.key === undefined || input.key === '') return (await input.create()).answer;
  const print = fingerprint(input.request);
  const ident = [input.companyId, input.kind, input.key];
  const { rows: claimed } = await db.query(
    `insert into idempotency_keys (company_id, kind, key, entity_id, fingerprint) values ($1, $2, $3, gen_random_uuid(), $4)
     on conflict do nothing returning key`, [...ident, print]);
  if (!claimed[0]) {
    const { rows } = await db.query('select entity_id, fingerprint from idempotency_keys where company_id = $1 and kind = $2 and key = $3', ident);
    const stored = rows[0];
    // Gone between the conflict and the read (a deleted company): nothing to replay.
    if (!stored) throw new PluginError(409, 'idempotency_conflict', 'A request with this Idempotency-Key is still being processed; retry it');
    if (stored.fingerprint !== print) throw new PluginError(409, 'idempotency_key_reused', `This Idempotency-Key was already used for a different ${input.kind} request`);
    const entity = await input.load(String(stored.entity_id));
    if (entity === null || entity === undefined) throw new PluginError(404, 'not_found', `The ${input.kind} this Idempotency-Key created no longer exists`);
    return { $response: { status: input.replayStatus ?? 200, body: entity, headers: { 'x-idempotent-replayed': 'true' } } };
  }
  const made = await input.create();
  await db.query('update idempotency_keys set entity_id = $4 where company_id = $1 and kind = $2 and key = $3', [...ident, made.id]);
  return made.answer;
}
