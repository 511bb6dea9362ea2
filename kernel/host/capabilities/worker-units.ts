import { workerSide as activityWrite } from './activity-write/worker.ts';
import { workerSide as agentsPause } from './agents-pause/worker.ts';
import { workerSide as budgetsWrite } from './budgets-write/worker.ts';
import { workerSide as companiesPause } from './companies-pause/worker.ts';
import { workerSide as databaseNamespaceRead } from './database-namespace-read/worker.ts';
import { workerSide as eventsPublish } from './events-publish/worker.ts';
import { workerSide as httpFetch } from './http-fetch/worker.ts';
import { workerSide as issuesNumber } from './issues-number/worker.ts';
import { workerSide as jobsEnqueue } from './jobs-enqueue/worker.ts';
import { workerSide as localFolders } from './local-folders/worker.ts';
import { workerSide as localWorkspaces } from './local-workspaces/worker.ts';
import type { WorkerCapability } from '../worker/capabilities/types.ts';
import { workerTable, type WorkerServices, type WorkerUnit } from '../worker/capabilities/unit.ts';

/**
 * The worker side of the capability folders (see units.ts): what the worker process serves
 * outside the kernel (network, local folders and working directories, the plugin's database,
 * activity, and the `database` methods that call `keel_bridge` functions in the call's own
 * transaction). Only worker.ts files are imported here, so the worker's bundle holds no
 * kernel-process code (test/host/capability-servers.test.ts checks the bundle). The grant check
 * happens before any of them runs (checkCapabilityCall of sdk/capabilities).
 */
export const WORKER_UNITS: readonly WorkerUnit[] = [
  activityWrite,
  agentsPause,
  budgetsWrite,
  companiesPause,
  databaseNamespaceRead,
  eventsPublish,
  httpFetch,
  issuesNumber,
  jobsEnqueue,
  localFolders,
  localWorkspaces,
];

/** The worker's method table for one plugin, derived from the units. */
export function workerCapabilities(services: WorkerServices): Record<string, WorkerCapability> {
  return workerTable(WORKER_UNITS, services);
}
