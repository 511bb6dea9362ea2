import { activityRead, activityWrite } from './activity.ts';
import { blobsRead, blobsWrite } from './blobs.ts';
import { catalogRead } from './catalog.ts';
import { instanceSettingsRead } from './instance-settings.ts';
import { contributionCapabilities } from './contributions.ts';
import { databaseMigrate, databaseRead, databaseWrite } from './database.ts';
import type { CapabilitySpec, MethodSpec } from './define.ts';
import { eventsPublish } from './events.ts';
import { executions } from './executions.ts';
import { localFolders } from './folders.ts';
import { localImport } from './local-import.ts';
import { secretsConfig } from './config-secrets.ts';
import { secretsStore } from './secrets-store.ts';
import { jobsEnqueue, jobsSchedule } from './jobs.ts';
import { httpFetch, httpProxy, httpRoutes, httpRoutesAbsolute, httpRoutesPublic } from './http.ts';
import { agentsInstructions, agentsManaged, agentsPause, agentsRead, agentsSkillsWrite, approvalsRead, budgetsWrite, companiesPause, companiesRead, issuesNumber } from './kernel-data.ts';
import { principalsRead } from './principals.ts';
import { runsClose, runsOpen, runsRead, secretsResolve } from './runs.ts';
import { servicesConsume, uiStreams } from './services.ts';
import { localWorkspaces } from './workspaces.ts';
import { executionsWorkspace } from './workspace-processes.ts';

/**
 * The capability registry: every capability a plugin can ask for, declared once (one module
 * per capability or family). The manifest schema's list of ids, the grant checks, the
 * plugin's typed `ctx`, the manifest rules and the generated capability tests all read it.
 */
export const CAPABILITIES = [
  databaseRead, databaseWrite, databaseMigrate, activityWrite, activityRead,
  httpRoutes, httpRoutesAbsolute, httpRoutesPublic, httpFetch, httpProxy, localFolders, localWorkspaces, localImport, secretsConfig, secretsStore,
  ...contributionCapabilities, jobsSchedule, jobsEnqueue,
  uiStreams, companiesRead, agentsRead, agentsPause, agentsSkillsWrite, approvalsRead, runsOpen, runsClose, runsRead,
  secretsResolve, servicesConsume, companiesPause, budgetsWrite, issuesNumber, eventsPublish, blobsRead, blobsWrite, catalogRead,
  principalsRead, agentsInstructions, agentsManaged,
  executions, executionsWorkspace,
  instanceSettingsRead,
] as const;

export type CapabilitySpecs = (typeof CAPABILITIES)[number];
export type CapabilityId = CapabilitySpecs['id'];
export const CAPABILITY_IDS: readonly CapabilityId[] = CAPABILITIES.map((spec) => spec.id);

const BY_ID = new Map<string, CapabilitySpec>(CAPABILITIES.map((spec) => [spec.id, spec]));

export function capabilitySpec(id: string): CapabilitySpec | undefined {
  return BY_ID.get(id);
}

/** A method of a `ctx` member, with every capability that grants it (any one is enough). */
export interface GrantedMethod { member: string; method: string; spec: MethodSpec; grantedBy: string[] }

const METHODS = new Map<string, GrantedMethod>();
for (const capability of CAPABILITIES as readonly CapabilitySpec[]) {
  for (const [member, methods] of Object.entries(capability.members)) {
    for (const [name, spec] of Object.entries(methods)) {
      const key = `${member}.${name}`;
      const known = METHODS.get(key);
      if (known) known.grantedBy.push(capability.id);
      else METHODS.set(key, { member, method: name, spec, grantedBy: [capability.id] });
    }
  }
}

/** The declaration of `ctx.<member>.<method>`, or undefined for a method no capability grants. */
export function capabilityMethod(member: string, method: string): GrantedMethod | undefined {
  return METHODS.get(`${member}.${method}`);
}

export function allCapabilityMethods(): GrantedMethod[] {
  return [...METHODS.values()];
}

/** The `ctx` members and methods the grants give, for building a plugin's `ctx`. */
export function grantedMembers(grants: readonly string[]): Map<string, string[]> {
  const members = new Map<string, string[]>();
  for (const found of METHODS.values()) {
    if (!found.grantedBy.some((id) => grants.includes(id))) continue;
    members.set(found.member, [...(members.get(found.member) ?? []), found.method]);
  }
  return members;
}

export type { CapabilitySpec, MethodSpec, ServedBy, JsonSchema } from './define.ts';
export type { PluginCapabilities } from './typed-context.ts';
