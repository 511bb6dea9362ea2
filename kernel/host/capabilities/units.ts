import { activityRead } from '../../../sdk/capabilities/activity.ts';
import { blobsRead, blobsWrite } from '../../../sdk/capabilities/blobs.ts';
import { catalogRead } from '../../../sdk/capabilities/catalog.ts';
import { secretsConfig } from '../../../sdk/capabilities/config-secrets.ts';
import { eventsPublish } from '../../../sdk/capabilities/events.ts';
import { executions } from '../../../sdk/capabilities/executions.ts';
import { httpProxy } from '../../../sdk/capabilities/http.ts';
import { instanceSettingsRead } from '../../../sdk/capabilities/instance-settings.ts';
import { jobsEnqueue, jobsSchedule } from '../../../sdk/capabilities/jobs.ts';
import { agentsInstructions, agentsManaged, agentsPause, agentsRead, agentsSkillsWrite, approvalsRead, budgetsWrite, companiesPause, companiesRead, issuesNumber } from '../../../sdk/capabilities/kernel-data.ts';
import { localImport } from '../../../sdk/capabilities/local-import.ts';
import { principalsRead } from '../../../sdk/capabilities/principals.ts';
import { runsClose, runsOpen, runsRead, secretsResolve } from '../../../sdk/capabilities/runs.ts';
import { secretsStore } from '../../../sdk/capabilities/secrets-store.ts';
import { servicesConsume, uiStreams } from '../../../sdk/capabilities/services.ts';
import { executionsWorkspace } from '../../../sdk/capabilities/workspace-processes.ts';
import { activityCapability } from './activity.ts';
import { agentsCapability } from './agents.ts';
import { approvalsCapability } from './approvals.ts';
import { blobsCapability } from './blobs.ts';
import { catalogCapability } from './catalog.ts';
import { companiesCapability } from './companies.ts';
import { configSecretsCapability } from './config-secrets.ts';
import { eventChecksCapability } from './events.ts';
import { executionsCapability } from './executions.ts';
import { httpProxyCapability } from './http-proxy.ts';
import { instanceSettingsCapability } from './instance-settings.ts';
import { jobChecksCapability } from './jobs.ts';
import { localImportCapability } from './local-import.ts';
import { principalsCapability } from './principals.ts';
import { progressCapability } from './progress.ts';
import { runsCapability } from './runs.ts';
import { secretsCapability } from './secrets.ts';
import { servicesCapability } from './services.ts';
import { streamsCapability } from './streams.ts';
import { kernelUnit, pick, type KernelUnit } from './unit.ts';
import { workspaceProcessesCapability } from './workspace-processes.ts';

/**
 * Every capability the kernel process serves, one unit per declaration (see unit.ts). A method
 * several declarations grant (`agents.get`, `blobs.get`, `progress.report`) is served by one
 * unit; test/host/capability-servers.test.ts fails when a declared method has no server or two.
 * Worker-served methods are registered in worker/capabilities/registry.ts.
 */
export const KERNEL_UNITS: readonly KernelUnit[] = [
  kernelUnit(activityRead, { serves: { activity: activityCapability.methods } }),
  kernelUnit(httpProxy, { serves: { http: httpProxyCapability.methods } }),
  kernelUnit(localImport, { serves: { localImport: localImportCapability.methods } }),
  kernelUnit(secretsConfig, { serves: { configSecrets: configSecretsCapability.methods } }),
  kernelUnit(secretsStore, { serves: { secrets: pick(secretsCapability, 'store', 'describe') } }),
  kernelUnit(jobsSchedule, { serves: { progress: progressCapability.methods } }),
  kernelUnit(jobsEnqueue, {
    internal: { jobChecks: jobChecksCapability.methods },
    bridgeFunctions: ['keel_bridge.stage_job(text, text, text, text)', 'keel_bridge.unstage_job(text, text, uuid)'],
  }),
  kernelUnit(uiStreams, { serves: { streams: streamsCapability.methods } }),
  kernelUnit(companiesRead, { serves: { companies: companiesCapability.methods } }),
  kernelUnit(agentsRead, { serves: { agents: pick(agentsCapability, 'get', 'list', 'getConfig') } }),
  kernelUnit(agentsPause, { bridgeFunctions: ['keel_bridge.hold_agent(text, text, uuid, boolean, text)'], writesKernelRows: true }),
  kernelUnit(agentsSkillsWrite, { serves: { agents: pick(agentsCapability, 'setDesiredSkills') } }),
  kernelUnit(approvalsRead, { serves: { approvals: approvalsCapability.methods } }),
  kernelUnit(runsOpen, { serves: { runs: pick(runsCapability, 'open') }, bridgeFunctions: ['keel_bridge.confirm_opened_runs(text, text)'] }),
  kernelUnit(runsClose, { serves: { runs: pick(runsCapability, 'close') } }),
  kernelUnit(runsRead, { serves: { runs: pick(runsCapability, 'get', 'withContext', 'recent') } }),
  kernelUnit(secretsResolve, { serves: { secrets: pick(secretsCapability, 'resolveEnvironment') } }),
  kernelUnit(servicesConsume, { serves: { services: servicesCapability.methods } }),
  kernelUnit(companiesPause, { bridgeFunctions: ['keel_bridge.hold_company(text, text, boolean, text)'], writesKernelRows: true }),
  kernelUnit(budgetsWrite, {
    bridgeFunctions: ['keel_bridge.set_monthly_budget(text, text, text, uuid, bigint)'],
    writesKernelRows: true,
  }),
  kernelUnit(issuesNumber, { bridgeFunctions: ['keel_bridge.next_issue_number(text, text)', 'keel_bridge.next_issue_numbers(text, text, integer)'] }),
  kernelUnit(eventsPublish, {
    internal: { eventChecks: eventChecksCapability.methods },
    bridgeFunctions: ['keel_bridge.publish_event(text, text, text, text, text, jsonb)', 'keel_bridge.publish_event(text, text, text, text, text, jsonb, uuid)'],
  }),
  kernelUnit(blobsRead, { serves: { blobs: pick(blobsCapability, 'get', 'readText') } }),
  kernelUnit(blobsWrite, { serves: { blobs: pick(blobsCapability, 'createText', 'link', 'delete') } }),
  kernelUnit(catalogRead, { serves: { catalog: catalogCapability.methods } }),
  kernelUnit(principalsRead, { serves: { principals: principalsCapability.methods } }),
  kernelUnit(agentsInstructions, { serves: { agents: pick(agentsCapability, 'setInstructionKeys') } }),
  kernelUnit(agentsManaged, { serves: { agents: pick(agentsCapability, 'getManaged', 'provisionManaged') } }),
  kernelUnit(executions, { serves: { executions: executionsCapability.methods } }),
  kernelUnit(executionsWorkspace, { serves: { workspaceProcesses: workspaceProcessesCapability.methods } }),
  kernelUnit(instanceSettingsRead, { serves: { instanceSettings: instanceSettingsCapability.methods } }),
];
