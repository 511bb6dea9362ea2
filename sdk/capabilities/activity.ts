import { defineCapability, method } from './define.ts';
import { nothing, uuid } from './schemas.ts';

export interface ActivityCapability {
  /** Written in the invocation's transaction, attributed to the invocation's actor and company. */
  record(entry: { action: string; entityType: string; entityId: string; details?: Record<string, unknown> }): Promise<void>;
}

export const activityWrite = defineCapability<{ activity: ActivityCapability }>()({
  id: 'activity.write',
  summary: "Write entries to the company's activity log, as the actor of the call",
  members: {
    activity: {
      record: method('worker', [{ type: 'object', required: ['action', 'entityType', 'entityId'], properties: { action: { type: 'string' }, entityType: { type: 'string' }, entityId: { type: 'string' }, details: { type: 'object' } } }], nothing, { scope: 'instance' }),
    },
  },
});

/** An entry of the activity log, as the kernel's activity routes answer it. */
export interface ActivityEntry {
  id: string;
  companyId: string | null;
  actorType: 'agent' | 'user' | 'system';
  actorId: string;
  action: string;
  entityType: string;
  entityId: string;
  agentId: string | null;
  runId: string | null;
  details: unknown;
  createdAt: string;
}

/** Exact-match filters of `ctx.activity.list`; `limit` is 1-1000 (default 100). */
export interface ActivityFilter { entityType?: string; entityId?: string; runId?: string; limit?: number }

export interface ActivityReadCapability {
  /**
   * Entries of the company the call serves, newest first (committed ones: the kernel reads
   * them outside the call's transaction). Details are masked as the company feed masks them.
   */
  list(filter?: ActivityFilter): Promise<ActivityEntry[]>;
}

export const MAX_ACTIVITY_LIST = 1000;

export const activityRead = defineCapability<{ activity: ActivityReadCapability }>()({
  id: 'activity.read',
  summary: 'Read the activity log of the company a call serves',
  members: {
    activity: {
      list: method('kernel', [{
        type: 'object', additionalProperties: false,
        properties: {
          entityType: { type: 'string', minLength: 1, maxLength: 200 },
          entityId: { type: 'string', minLength: 1, maxLength: 500 },
          runId: uuid,
          limit: { type: 'integer', minimum: 1, maximum: MAX_ACTIVITY_LIST },
        },
      }], { type: 'array', items: { type: 'object', required: ['id', 'action', 'entityType', 'entityId', 'createdAt'] } }, { required: 0 }),
    },
  },
});
