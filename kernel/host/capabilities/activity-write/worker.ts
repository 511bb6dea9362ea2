import { activityWrite as spec } from '../../../../sdk/capabilities/activity.ts';
import { sanitizeDetails } from '../../../../sdk/shared/sanitize.ts';
import type { DeliveredSecrets } from '../../worker/delivered-secrets.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { checkedActivityEntry, type ActivityEntry } from '../../../../sdk/shared/activity-entry.ts';
import { onInvocationClient, type ActivityEntityKinds } from '../../worker/capabilities/activity-entity-kinds.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.activity.record`: an entry in the kernel's activity log, written in the invocation's
 * own transaction through `keel_bridge.record_activity`. That function (owned by the kernel)
 * accepts the write only with the invocation identity the kernel signed, and takes company,
 * actor and run from it: the plugin chooses what happened, never who did it or where.
 */
function activityValues(invocation: Invocation, entry: { action: string; entityType: string; entityId: string; details?: unknown }, secrets?: DeliveredSecrets): unknown[] {
  if (invocation.message.readOnly) throw new CapabilityError(403, 'activity_read_only', 'This route is declared readOnly; it cannot write activity');
  const signed = invocation.message.signed;
  if (!signed) throw new CapabilityError(403, 'activity_unavailable', 'This invocation carries no signed identity; activity cannot be written');
  if (secrets && secrets.text(entry.action) !== entry.action) throw new CapabilityError(400, 'invalid_activity', 'action carries a secret value');
  // Sanitised here, in host code, exactly as the kernel sanitises its own entries, and rid of
  // the secret values the host delivered to this plugin.
  const details = entry.details === undefined ? null : JSON.stringify(sanitizeDetails(entry.details, secrets?.active ?? []));
  return [signed.invocation, signed.signature, entry.action, secrets?.text(entry.entityType) ?? entry.entityType, secrets?.text(entry.entityId) ?? entry.entityId, details];
}

export async function writeActivity(db: PluginDatabase, invocation: Invocation, entry: { action: string; entityType: string; entityId: string; details?: unknown }, secrets?: DeliveredSecrets): Promise<void> {
  const values = activityValues(invocation, entry, secrets);
  const sql = 'select keel_bridge.record_activity($1, $2, $3, $4, $5, $6::jsonb)';
  if (invocation.batch) {
    // In a batch, entries are written together just before the shared COMMIT: the activity
    // chain's per-company lock is then held once per batch, not once per call.
    invocation.pendingActivity.push(values);
    invocation.activityWritten = true;
    return;
  }
  if (invocation.wantsTransaction) {
    // A call with its own transaction writes its entries just before its COMMIT (with-commit.ts),
    // for the same reason: appending takes the company's chain head, a row every write of the
    // company needs, and holds it until the commit; taken last, it is held for the commit alone
    // rather than for the rest of the call. The transaction is opened now (it usually is
    // already), so that the entries have one to join.
    await db.transactionOf(invocation);
    invocation.pendingActivity.push(values);
    invocation.activityWritten = true;
    return;
  }
  try {
    await onInvocationClient(db, invocation, (client) => client.query({ text: sql, values }));
  } catch (error) {
    throw refusedEntity(error) ?? error;
  }
  invocation.activityWritten = true;
}

const kindOf = (entityType: string) => entityType.trim().toLowerCase();

/**
 * An entry naming a kernel entity is checked before it is written or buffered: the database
 * answers (rather than raises) why it may not, so a refused entry fails that one call and not
 * the plugin's transaction or a batch's shared commit. The write functions check again.
 */
async function assertEntityInScope(db: PluginDatabase, invocation: Invocation, entry: ActivityEntry): Promise<void> {
  const signed = invocation.message.signed;
  if (!signed) return;
  const result = await onInvocationClient(db, invocation, (client) => client.query<{ refusal: string | null }>({
    text: 'select keel_bridge.activity_entity_refusal($1, $2, $3, $4) as refusal',
    values: [signed.invocation, signed.signature, entry.entityType, entry.entityId],
  }));
  const refusal = result.rows[0]?.refusal;
  if (refusal) throw new CapabilityError(403, 'activity_entity_denied', `ctx.activity.record refused: ${refusal}`);
}

/** The database's refusal of an entity (raised by the write functions), as the plugin sees it. */
function refusedEntity(error: unknown): CapabilityError | null {
  const pgError = error as { hint?: string; message?: string };
  return pgError?.hint === 'keel_activity_entity' ? new CapabilityError(403, 'activity_entity_denied', `ctx.activity.record refused: ${pgError.message}`) : null;
}

/**
 * A call of a batch only buffers its entry (written with the batch's others before COMMIT),
 * so it is answered at once, without a round trip back into the isolate. Answers null when
 * the call is not part of a batch.
 */
export function recordInBatch(db: PluginDatabase | null, invocation: Invocation, args: unknown[], kinds: ActivityEntityKinds, secrets: DeliveredSecrets): null | undefined {
  if (!invocation.batch || !db) return undefined;
  const entry = checkedActivityEntry(args);
  // An entry naming a kernel entity needs the database's word first: the asynchronous path.
  const checked = kinds.known;
  if (!checked || checked.has(kindOf(entry.entityType))) return undefined;
  invocation.pendingActivity.push(activityValues(invocation, entry, secrets));
  invocation.activityWritten = true;
  return null;
}

export function activityCapability(db: PluginDatabase | null, kinds: ActivityEntityKinds, secrets: DeliveredSecrets): WorkerCapability {
  return {
    record: async (invocation: Invocation, args: unknown[]) => {
      const entry = checkedActivityEntry(args);
      if (!db) throw new CapabilityError(403, 'activity_unavailable', 'activity needs the plugin database connection');
      // Refused calls (read-only, unsigned, a secret in the action) are refused before any database work.
      activityValues(invocation, entry, secrets);
      if ((await kinds.get(invocation)).has(kindOf(entry.entityType))) await assertEntityInScope(db, invocation, entry);
      await writeActivity(db, invocation, entry, secrets);
      return null;
    },
  };
}

/**
 * Writes the buffered entries of a batch's successful calls in one statement, in order;
 * `keel_bridge.record_activities` checks every entry's signed identity before writing any.
 */
export async function flushBatchActivity(client: import('pg').PoolClient, entries: unknown[][]): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map(([invocation, signature, action, entityType, entityId, details]) => ({ invocation, signature, action, entityType, entityId, details: details === null ? null : JSON.parse(details as string) }));
  await client.query({ text: 'select keel_bridge.record_activities($1::jsonb)', values: [JSON.stringify(rows)] });
}

export const workerSide = workerUnit(spec, ({ database, activityKinds, delivered }) => ({ activity: activityCapability(database, activityKinds, delivered) }));
