import { activityWrite } from '../../../../sdk/capabilities/activity.ts';
import { databaseRead } from '../../../../sdk/capabilities/database.ts';
import { eventsPublish } from '../../../../sdk/capabilities/events.ts';
import { localFolders } from '../../../../sdk/capabilities/folders.ts';
import { httpFetch } from '../../../../sdk/capabilities/http.ts';
import { jobsEnqueue } from '../../../../sdk/capabilities/jobs.ts';
import { agentsPause, budgetsWrite, companiesPause, issuesNumber } from '../../../../sdk/capabilities/kernel-data.ts';
import { localWorkspaces } from '../../../../sdk/capabilities/workspaces.ts';
import { activityCapability } from './activity.ts';
import { eventsCapability } from './events.ts';
import { foldersCapability } from './folders.ts';
import { httpCapability } from './http-fetch.ts';
import { jobsCapability } from './jobs.ts';
import { kernelRowCapabilities } from './kernel-rows.ts';
import type { WorkerCapability } from './types.ts';
import { pickMethods, workerTable, workerUnit, type WorkerServices, type WorkerUnit } from './unit.ts';
import { workspacesCapability } from './workspaces.ts';

/**
 * Every capability the worker serves (outside the kernel process), one unit per declaration:
 * network, local folders and working directories, the plugin's database, activity, and the
 * `database` methods that call `keel_bridge` functions in the call's own transaction (their
 * grants are registered with the kernel's units, capabilities/units.ts). A method several
 * declarations grant (`db.query`) is served by one unit. The grant check happens before any of
 * them runs (checkCapabilityCall of sdk/capabilities).
 */
export const WORKER_UNITS: readonly WorkerUnit[] = [
  // database.namespace.write grants the same `db.query`; the connection's role decides what it may do.
  workerUnit(databaseRead, ({ database }): Record<string, WorkerCapability> => (database ? { db: database.capability() } : {})),
  workerUnit(activityWrite, ({ database, activityKinds, delivered }) => ({ activity: activityCapability(database, activityKinds, delivered) })),
  workerUnit(httpFetch, ({ init }) => ({ http: httpCapability(init) })),
  workerUnit(localFolders, () => ({ folders: foldersCapability() })),
  workerUnit(localWorkspaces, () => ({ workspaces: workspacesCapability() })),
  workerUnit(eventsPublish, ({ database, kernel, activityKinds }) => ({ events: eventsCapability(database, kernel, activityKinds) })),
  workerUnit(jobsEnqueue, ({ database, kernel }) => ({ jobs: jobsCapability(database, kernel) })),
  workerUnit(budgetsWrite, ({ database }) => ({ budgets: kernelRowCapabilities(database).budgets })),
  workerUnit(agentsPause, ({ database }) => ({ agents: kernelRowCapabilities(database).agents })),
  workerUnit(companiesPause, ({ database }) => ({ companies: pickMethods(kernelRowCapabilities(database).companies, 'pause', 'resume') })),
  workerUnit(issuesNumber, ({ database }) => ({ companies: pickMethods(kernelRowCapabilities(database).companies, 'nextIssueNumber', 'nextIssueNumbers') })),
];

/** The worker's method table for one plugin, derived from the units. */
export function workerCapabilities(services: WorkerServices): Record<string, WorkerCapability> {
  return workerTable(WORKER_UNITS, services);
}
