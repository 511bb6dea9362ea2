import { clientFor, companyIdFor, emitList, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';

/** The company's activity log (docs/api/activity.md), newest first, with its exact-match filters. */
export async function listCommand(options: GlobalOptions & { agentId?: string; entityType?: string; entityId?: string }): Promise<void> {
  const entries = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/activity`, { agentId: options.agentId, entityType: options.entityType, entityId: options.entityId });
  emitList(options, entries, ['createdAt', 'action', 'entityType', 'entityId', 'actorType', 'actorId'], 'No activity');
}
