import { WORKER_UNIT_MODULES } from 'keel:capability-worker-units';
import type { WorkerCapability } from '../worker/capabilities/types.ts';
import { isWorkerUnit, workerTable, type WorkerServices, type WorkerUnit } from '../worker/capabilities/unit.ts';
import { checkedUnit } from './unit-check.ts';

/**
 * The worker side of the capability folders (folders.ts): what the worker process serves
 * outside the kernel (network, local folders and working directories, the plugin's database,
 * activity, and the `database` methods that call `keel_bridge` functions in the call's own
 * transaction). The folders' worker.ts modules come from the worker's build
 * (worker-units-module.ts), which imports those files and nothing else, so the worker's bundle
 * holds no kernel-process code (test/host/capability-servers.test.ts checks the bundle). Each is
 * checked like a kernel unit (unit-check.ts) when the worker loads. The grant check happens
 * before any of them runs (checkCapabilityCall of sdk/capabilities).
 */
export const WORKER_UNITS: readonly WorkerUnit[] = WORKER_UNIT_MODULES.map(({ folder, module }) => checkedUnit(folder, 'worker', module, isWorkerUnit));

/** The worker's method table for one plugin, derived from the units. */
export function workerCapabilities(services: WorkerServices): Record<string, WorkerCapability> {
  return workerTable(WORKER_UNITS, services);
}
