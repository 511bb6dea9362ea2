import type { CapabilitySpec } from '../../../../sdk/capabilities/define.ts';
import type { WorkerInit } from '../../protocol/messages.ts';
import type { DeliveredSecrets } from '../delivered-secrets.ts';
import type { ActivityEntityKinds } from './activity-entity-kinds.ts';
import type { PluginDatabase } from './database.ts';
import type { KernelCall, WorkerCapability } from './types.ts';

/** What a worker-served capability is built from, once per loaded plugin. */
export interface WorkerServices {
  init: WorkerInit;
  /** The plugin's own database connection (null for a plugin without one). */
  database: PluginDatabase | null;
  activityKinds: ActivityEntityKinds;
  delivered: DeliveredSecrets;
  /** A call to the kernel's broker for this plugin (the broker checks invocation and grant again). */
  kernel: KernelCall;
}

/**
 * What the worker serves for one capability (its `worker` and `database` methods), registered
 * against its SDK declaration: `serve` builds the handlers by `ctx` member, then method. The
 * worker's method table is derived from these units (capabilities/worker-units.ts, which the
 * worker's bundle fills with every capability folder's worker.ts).
 */
export interface WorkerUnit {
  spec: CapabilitySpec;
  serve(services: WorkerServices): Record<string, WorkerCapability>;
}

/** The units workerUnit() made: what a capability folder's worker.ts exports is checked to be one at load. */
const made = new WeakSet<object>();

export function workerUnit(spec: CapabilitySpec, serve: WorkerUnit['serve']): WorkerUnit {
  const unit: WorkerUnit = { spec, serve };
  made.add(unit);
  return unit;
}

export function isWorkerUnit(value: unknown): value is WorkerUnit {
  return typeof value === 'object' && value !== null && made.has(value);
}

/** The worker's table (member -> method -> handler) for one plugin; a method registered twice is an error. */
export function workerTable(units: readonly WorkerUnit[], services: WorkerServices): Record<string, WorkerCapability> {
  const table: Record<string, WorkerCapability> = {};
  for (const unit of units) {
    for (const [member, methods] of Object.entries(unit.serve(services))) {
      const served = (table[member] ??= {});
      for (const [name, handler] of Object.entries(methods)) {
        if (Object.hasOwn(served, name)) throw new Error(`${member}.${name} is served by two worker units (the second: ${unit.spec.id})`);
        served[name] = handler;
      }
    }
  }
  return table;
}
