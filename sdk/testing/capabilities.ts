import type { InvocationInfo } from '../plugin/context.ts';
import { CapabilityFault } from './errors.ts';
import type { FakeDatabase } from './fake-database.ts';
import type { FakeFolders } from './fake-folders.ts';
import type { FakeHttp } from './fake-http.ts';
import { KERNEL_METHODS, type FakeKernel, type KernelMethod } from './fake-kernel.ts';
import { sanitizeDetails } from './host-shared.ts';

export { GRANT_OF } from '../../kernel/host/worker/capability-grants.ts';

/** An activity entry as the test host recorded it, with the identity the host attached. */
export interface RecordedActivity {
  action: string;
  entityType: string;
  entityId: string;
  details: Record<string, unknown> | null;
  companyId: string | null;
  actor: InvocationInfo['actor'];
  runId: string | null;
  invocationId: string;
  /** True for the entry the host writes itself when a mutating call recorded none. */
  byHost: boolean;
}

const ACTION = /^[a-z][a-z0-9_.:-]{0,127}$/;

/** `ctx.activity.record`, checked with the worker's rules; the identity comes from the invocation. */
export function activityEntry(args: unknown[], info: InvocationInfo): RecordedActivity {
  const entry = args[0] as { action?: unknown; entityType?: unknown; entityId?: unknown; details?: unknown } | undefined;
  if (!entry || typeof entry !== 'object') throw new CapabilityFault(400, 'invalid_activity', 'ctx.activity.record needs {action, entityType, entityId, details?}');
  if (typeof entry.action !== 'string' || !ACTION.test(entry.action)) throw new CapabilityFault(400, 'invalid_activity', 'action must be a dotted lower-case name of at most 128 characters');
  if (typeof entry.entityType !== 'string' || entry.entityType.length === 0 || entry.entityType.length > 100) throw new CapabilityFault(400, 'invalid_activity', 'entityType must be a non-empty string of at most 100 characters');
  if (typeof entry.entityId !== 'string' || entry.entityId.length === 0 || entry.entityId.length > 200) throw new CapabilityFault(400, 'invalid_activity', 'entityId must be a non-empty string of at most 200 characters');
  if (entry.details !== undefined && (entry.details === null || typeof entry.details !== 'object' || Array.isArray(entry.details))) throw new CapabilityFault(400, 'invalid_activity', 'details must be an object');
  if (entry.details !== undefined && JSON.stringify(entry.details).length > 32_000) throw new CapabilityFault(413, 'invalid_activity', 'details larger than 32,000 characters');
  return {
    action: entry.action, entityType: entry.entityType, entityId: entry.entityId,
    details: entry.details === undefined ? null : sanitizeDetails(entry.details) as Record<string, unknown>,
    companyId: info.companyId, actor: info.actor, runId: info.runId, invocationId: info.id, byHost: false,
  };
}

export interface CapabilityServices {
  grants: readonly string[];
  db: FakeDatabase;
  http: FakeHttp;
  folders: FakeFolders;
  kernel: FakeKernel;
}

/** Serves one granted capability call against the fakes; `record` receives activity entries. */
export async function serveCall(services: CapabilityServices, capability: string, method: string, args: unknown[], info: InvocationInfo, transactional: boolean, record: (entry: RecordedActivity) => void): Promise<unknown> {
  switch (capability) {
    case 'db':
      if (method !== 'query') break;
      return services.db.run(args[0], args[1], { invocation: info, transactional }, services.grants.includes('database.namespace.write'));
    case 'activity':
      if (method !== 'record') break;
      record(activityEntry(args, info));
      return null;
    case 'http':
      if (method !== 'fetch') break;
      return services.http.fetch(args[0], args[1]);
    case 'folders': {
      const run = services.folders.methods()[method];
      if (!run) break;
      return run(args);
    }
    default: {
      const name = `${capability}.${method}` as KernelMethod;
      if (KERNEL_METHODS.includes(name)) return services.kernel.call(name, args, info);
    }
  }
  throw new CapabilityFault(400, 'unknown_method', `Unknown method ${capability}.${method}`);
}
