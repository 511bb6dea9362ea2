import { sanitizeDetails } from '../../../activity/sanitize.ts';
import type { PluginDatabase } from './database.ts';
import type { Invocation } from '../invocation.ts';
import { CapabilityError, type WorkerCapability } from './types.ts';

const ACTION = /^[a-z][a-z0-9_.:-]{0,127}$/;

/**
 * `ctx.activity.record`: an entry in the kernel's activity log, written in the invocation's
 * own transaction through `keel_bridge.record_activity`. That function (owned by the kernel)
 * accepts the write only with the invocation identity the kernel signed, and takes company,
 * actor and run from it: the plugin chooses what happened, never who did it or where.
 */
function activityValues(invocation: Invocation, entry: { action: string; entityType: string; entityId: string; details?: unknown }): unknown[] {
  if (invocation.message.readOnly) throw new CapabilityError(403, 'activity_read_only', 'This route is declared readOnly; it cannot write activity');
  const signed = invocation.message.signed;
  if (!signed) throw new CapabilityError(403, 'activity_unavailable', 'This invocation carries no signed identity; activity cannot be written');
  // Sanitised here, in host code, exactly as the kernel sanitises its own entries.
  return [signed.invocation, signed.signature, entry.action, entry.entityType, entry.entityId, entry.details === undefined ? null : JSON.stringify(sanitizeDetails(entry.details))];
}

export async function writeActivity(db: PluginDatabase, invocation: Invocation, entry: { action: string; entityType: string; entityId: string; details?: unknown }): Promise<void> {
  const values = activityValues(invocation, entry);
  const sql = 'select keel_bridge.record_activity($1, $2, $3, $4, $5, $6::jsonb)';
  if (invocation.batch) {
    // In a batch, entries are written together just before the shared COMMIT: the activity
    // chain's per-company lock is then held once per batch, not once per call.
    invocation.pendingActivity.push(values);
    invocation.activityWritten = true;
    return;
  }
  const transaction = invocation.transactionClient(db.pool);
  if (transaction) {
    await (await transaction).query({ text: sql, values });
  } else {
    const client = await db.pool.connect();
    try { await client.query({ text: sql, values }); } finally { db.release(client); }
  }
  invocation.activityWritten = true;
}

type ActivityEntry = { action: string; entityType: string; entityId: string; details?: unknown };

/** The checked entry of a `ctx.activity.record` call, or a CapabilityError saying what is wrong with it (sdk/testing applies the same rules). */
export function checkedActivityEntry(args: unknown[]): ActivityEntry {
  const entry = args[0] as { action?: unknown; entityType?: unknown; entityId?: unknown; details?: unknown } | undefined;
  if (!entry || typeof entry !== 'object') throw new CapabilityError(400, 'invalid_activity', 'ctx.activity.record needs {action, entityType, entityId, details?}');
  if (typeof entry.action !== 'string' || !ACTION.test(entry.action)) throw new CapabilityError(400, 'invalid_activity', 'action must be a dotted lower-case name of at most 128 characters');
  if (typeof entry.entityType !== 'string' || entry.entityType.length === 0 || entry.entityType.length > 100) throw new CapabilityError(400, 'invalid_activity', 'entityType must be a non-empty string of at most 100 characters');
  if (typeof entry.entityId !== 'string' || entry.entityId.length === 0 || entry.entityId.length > 200) throw new CapabilityError(400, 'invalid_activity', 'entityId must be a non-empty string of at most 200 characters');
  if (entry.details !== undefined && (entry.details === null || typeof entry.details !== 'object' || Array.isArray(entry.details))) throw new CapabilityError(400, 'invalid_activity', 'details must be an object');
  if (entry.details !== undefined && JSON.stringify(entry.details).length > 32_000) throw new CapabilityError(413, 'invalid_activity', 'details larger than 32,000 characters');
  return entry as ActivityEntry;
}

/**
 * A call of a batch only buffers its entry (written with the batch's others before COMMIT),
 * so it is answered at once, without a round trip back into the isolate. Answers null when
 * the call is not part of a batch.
 */
export function recordInBatch(db: PluginDatabase | null, invocation: Invocation, args: unknown[]): null | undefined {
  if (!invocation.batch || !db) return undefined;
  invocation.pendingActivity.push(activityValues(invocation, checkedActivityEntry(args)));
  invocation.activityWritten = true;
  return null;
}

export function activityCapability(db: PluginDatabase | null): WorkerCapability {
  return {
    record: async (invocation: Invocation, args: unknown[]) => {
      const entry = checkedActivityEntry(args);
      if (!db) throw new CapabilityError(403, 'activity_unavailable', 'activity needs the plugin database connection');
      await writeActivity(db, invocation, entry);
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
