import { CapabilityError } from './capability-error.ts';

const ACTION = /^[a-z][a-z0-9_.:-]{0,127}$/;

export type ActivityEntry = { action: string; entityType: string; entityId: string; details?: unknown };

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

