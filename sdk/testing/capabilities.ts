import type { InvocationInfo } from '../plugin/context.ts';
import { CapabilityFault } from './errors.ts';
import type { FakeDatabase } from './fake-database.ts';
import type { FakeFolders } from './fake-folders.ts';
import type { FakeHttp } from './fake-http.ts';
import { KERNEL_METHODS, type FakeKernel, type KernelMethod } from './fake-kernel.ts';
import { checkedActivityEntry, sanitizeDetails } from './host-shared.ts';

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

/** `ctx.activity.record`, checked with the worker's own rules; the identity comes from the invocation. */
export function activityEntry(args: unknown[], info: InvocationInfo): RecordedActivity {
  const entry = checkedActivityEntry(args);
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
      // Hooks run read-only on the real host (they may only veto the kernel's change): no writes.
      return services.db.run(args[0], args[1], { invocation: info, transactional }, services.grants.includes('database.namespace.write') && info.kind !== 'hook');
    case 'activity':
      if (method !== 'record') break;
      if (info.kind === 'hook') throw new CapabilityFault(403, 'activity_read_only', 'A hook runs read-only (it may only veto the change); it cannot write activity');
      record(activityEntry(args, info));
      return null;
    case 'http':
      if (method === 'checkProxyTarget') return services.http.checkProxyTarget(args[0]);
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
