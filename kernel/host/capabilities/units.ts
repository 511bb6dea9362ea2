import { kernelSide as activityRead } from './activity-read/kernel.ts';
import { kernelSide as agentsInstructions } from './agents-instructions/kernel.ts';
import { kernelSide as agentsManaged } from './agents-managed/kernel.ts';
import { kernelSide as agentsPause } from './agents-pause/kernel.ts';
import { kernelSide as agentsRead } from './agents-read/kernel.ts';
import { kernelSide as agentsSkillsWrite } from './agents-skills-write/kernel.ts';
import { kernelSide as approvalsRead } from './approvals-read/kernel.ts';
import { kernelSide as blobsRead } from './blobs-read/kernel.ts';
import { kernelSide as blobsWrite } from './blobs-write/kernel.ts';
import { kernelSide as budgetsWrite } from './budgets-write/kernel.ts';
import { kernelSide as catalogRead } from './catalog-read/kernel.ts';
import { kernelSide as companiesPause } from './companies-pause/kernel.ts';
import { kernelSide as companiesRead } from './companies-read/kernel.ts';
import { kernelSide as eventsPublish } from './events-publish/kernel.ts';
import { kernelSide as executions } from './executions/kernel.ts';
import { kernelSide as executionsWorkspace } from './executions-workspace/kernel.ts';
import { kernelSide as httpProxy } from './http-proxy/kernel.ts';
import { kernelSide as instanceSettingsRead } from './instance-settings-read/kernel.ts';
import { kernelSide as issuesNumber } from './issues-number/kernel.ts';
import { kernelSide as jobsEnqueue } from './jobs-enqueue/kernel.ts';
import { kernelSide as jobsSchedule } from './jobs-schedule/kernel.ts';
import { kernelSide as localImport } from './local-import/kernel.ts';
import { kernelSide as principalsRead } from './principals-read/kernel.ts';
import { kernelSide as runsClose } from './runs-close/kernel.ts';
import { kernelSide as runsOpen } from './runs-open/kernel.ts';
import { kernelSide as runsRead } from './runs-read/kernel.ts';
import { kernelSide as secretsConfig } from './secrets-config/kernel.ts';
import { kernelSide as secretsResolve } from './secrets-resolve/kernel.ts';
import { kernelSide as secretsStore } from './secrets-store/kernel.ts';
import { kernelSide as servicesConsume } from './services-consume/kernel.ts';
import { kernelSide as uiStreams } from './ui-streams/kernel.ts';
import type { KernelUnit } from './unit.ts';

/**
 * The kernel side of every capability folder: one folder of this directory per SDK declaration
 * (named after its id, `agents.pause` -> agents-pause/), holding everything that serves it: its
 * kernel handlers and unit (kernel.ts), its worker handlers and unit (worker.ts, listed in
 * worker-units.ts, which the worker process loads instead of this list), and its `keel_bridge`
 * functions (bridge.sql, installed by the migration runner: kernel/db/bridge-functions.ts).
 * The broker's table, the bridge grants and the kernel-row grants are derived from these units
 * (unit.ts). test/host/capability-servers.test.ts fails when a declared method has no server or
 * two, and when a folder's kernel.ts or worker.ts is missing from its list.
 */
export const KERNEL_UNITS: readonly KernelUnit[] = [
  activityRead,
  agentsInstructions,
  agentsManaged,
  agentsPause,
  agentsRead,
  agentsSkillsWrite,
  approvalsRead,
  blobsRead,
  blobsWrite,
  budgetsWrite,
  catalogRead,
  companiesPause,
  companiesRead,
  eventsPublish,
  executions,
  executionsWorkspace,
  httpProxy,
  instanceSettingsRead,
  issuesNumber,
  jobsEnqueue,
  jobsSchedule,
  localImport,
  principalsRead,
  runsClose,
  runsOpen,
  runsRead,
  secretsConfig,
  secretsResolve,
  secretsStore,
  servicesConsume,
  uiStreams,
];
