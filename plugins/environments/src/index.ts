import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import { createEnvironment, deleteEnvironment, environmentCapabilities, getEnvironment, listEnvironments, probeConfig, probeEnvironment, updateEnvironment } from './environments.ts';
import {
  createExecutionWorkspace, getCloseReadiness, getExecutionWorkspace, getRuntimeServices, listExecutionWorkspaces, listWorkspaceOperations, runtimeAction, updateExecutionWorkspace,
} from './execution-workspaces.ts';
import { acquireLease, getLease, listLeases, onRunClosed, releaseLease, runLeaseService } from './leases.ts';
import { onExecutionFinished, operationLog } from './runtime-services.ts';
import { onCompanyDeleted } from './lifecycle.ts';

export default definePlugin({
  routes: {
    'list-environments': listEnvironments,
    'create-environment': createEnvironment,
    'environment-capabilities': environmentCapabilities,
    'probe-environment-config': probeConfig,
    'get-environment': getEnvironment,
    'update-environment': updateEnvironment,
    'delete-environment': deleteEnvironment,
    'probe-environment': probeEnvironment,
    'list-environment-leases': listLeases,
    'acquire-environment-lease': acquireLease,
    'get-environment-lease': getLease,
    'release-environment-lease': releaseLease,
    'list-execution-workspaces': listExecutionWorkspaces,
    'create-execution-workspace': createExecutionWorkspace,
    'get-execution-workspace': getExecutionWorkspace,
    'update-execution-workspace': updateExecutionWorkspace,
    'execution-workspace-close-readiness': getCloseReadiness,
    'execution-workspace-operations': listWorkspaceOperations,
    'execution-workspace-runtime-services': runtimeAction('runtime_service'),
    'execution-workspace-runtime-commands': runtimeAction('runtime_command'),
    'execution-workspace-runtime-service-list': getRuntimeServices,
    'execution-workspace-operation-log': operationLog,
  },
  services: {
    'run-lease': runLeaseService,
  },
  events: {
    [kernelEvents.companyDeleted.name]: onCompanyDeleted,
    [kernelEvents.runClosed.name]: onRunClosed,
    [kernelEvents.executionFinished.name]: onExecutionFinished,
  },
});
