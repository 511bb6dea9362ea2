import { defineCapability, method } from './define.ts';
import { nothing } from './schemas.ts';

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
