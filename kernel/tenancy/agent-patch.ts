import type { Queryable } from '../db/database.ts';
import { conflict, forbidden, unprocessable } from '../http/errors.ts';
import { ensureDeviceKey } from './adapter-defaults.ts';
import { agentMayManageAgents, type Caller } from './agent-access.ts';
import { isPlainObject, mergeAdapterConfig, restoreMasked, SKILL_SYNC_KEY, validateAdapterEnv, withDesiredSkills } from './agent-config.ts';
import { trimmedOrNull, type AgentFieldsInput, type UpdateAgentInput } from './agent-input.ts';
import { withStatus, stateOf, type AgentState } from './agent-service.ts';
import { assertShortnameAvailable, deriveShortname, lockCompanyShortnames } from './agent-shortname.ts';
import { assertSecretRefsBelongToCompany, assertValidManager, awaitingApproval, awaitsBoardApproval, type AgentRow } from './agents.ts';
import { unapprovedConfig } from './agent-config-revisions.ts';

/**
 * PATCH /api/agents/{agentId}: who may change which fields, and how a patch turns into the
 * next row. Everything here throws before the row is written.
 */
const PATCH_FIELDS = ['name', 'role', 'title', 'icon', 'capabilities', 'reportsTo', 'adapterType', 'adapterConfig', 'runtimeConfig',
  'budgetMonthlyCents', 'desiredSkills', 'metadata', 'status', 'replaceAdapterConfig'] as const;

/** What an agent may change about itself without agents:create: its presentation, not its powers. */
export const SELF_EDITABLE_FIELDS = ['name', 'title', 'icon', 'capabilities', 'metadata'] as const;

/** Instruction-bundle and skill settings survive a full replace that does not mention them. */
const PRESERVED_ON_REPLACE = [SKILL_SYNC_KEY, 'instructionsFilePath', 'instructionsBundleMode', 'instructionsRootPath', 'instructionsEntryFile', 'agentsMdPath'];

export function patchedFields(body: UpdateAgentInput): string[] {
  return PATCH_FIELDS.filter((field) => Object.hasOwn(body, field) && (body as Record<string, unknown>)[field] !== undefined);
}

export async function authorizePatch(db: Queryable, caller: Caller, agent: AgentRow, fields: string[]): Promise<void> {
  if (caller.kind === 'board') return;
  if (fields.includes('status')) {
    throw forbidden('Agents cannot change status with PATCH; use POST /api/agents/{agentId}/pause or /resume', 'permission_denied');
  }
  if (await agentMayManageAgents(db, caller.agentId, agent.company_id)) return;
  if (caller.agentId === agent.id) {
    const privileged = fields.filter((field) => !(SELF_EDITABLE_FIELDS as readonly string[]).includes(field));
    if (privileged.length === 0) return;
    throw forbidden(`Missing permission: changing ${privileged.join(', ')} requires the agents:create grant; an agent may change only its own ${SELF_EDITABLE_FIELDS.join(', ')}`,
      'permission_denied', { permission: 'agents:create', fields: privileged });
  }
  throw forbidden('Missing permission: updating another agent requires the agents:create grant (or permissions.canCreateAgents)', 'permission_denied', { permission: 'agents:create' });
}

/** Status moves a PATCH may not make: resurrecting, activating a pending hire, re-entering pending. */
export function assertStatusPatchAllowed(from: string, to: string): void {
  if (from === to) return;
  if (from === 'terminated') throw conflict('Terminated agents cannot be resumed', { from, to }, 'invalid_status_transition');
  if (to === 'pending_approval') throw unprocessable('Status pending_approval is set only by the hire flow', { from, to }, 'invalid_status_transition');
  if (from === 'pending_approval' && to !== 'terminated') {
    throw conflict('Pending approval agents cannot be activated directly; use POST /api/agents/{agentId}/approve', { from, to }, 'invalid_status_transition');
  }
}

/** The next row state for a patch; validates references and shortnames against the database. */
export async function nextStateForPatch(db: Queryable, before: AgentRow, body: UpdateAgentInput): Promise<AgentState> {
  let next = stateOf(before);
  if (body.status !== undefined) {
    assertStatusPatchAllowed(before.status, body.status);
    if (awaitsBoardApproval(before) && body.status !== before.status && body.status !== 'terminated' && await unapprovedConfig(db, before.id)) {
      throw awaitingApproval(before);
    }
    if (body.status !== before.status) next = withStatus(next, body.status);
  }
  next = await applyConfigFields(db, before, next, body, { replaceAdapterConfig: body.replaceAdapterConfig === true });
  return next;
}

/**
 * The configuration fields of a patch (shared with rollback, which sends every field and
 * replaces adapterConfig wholesale).
 */
export async function applyConfigFields(db: Queryable, before: AgentRow, state: AgentState, body: AgentFieldsInput, options: { replaceAdapterConfig: boolean }): Promise<AgentState> {
  const next = { ...state };
  if (body.name !== undefined) {
    next.name = body.name.trim();
    next.url_key = deriveShortname(next.name);
    if (next.url_key !== before.url_key && next.status !== 'terminated') {
      await lockCompanyShortnames(db, before.company_id);
      await assertShortnameAvailable(db, before.company_id, next.url_key, before.id);
    }
  }
  if (body.role !== undefined) next.role = body.role.trim().toLowerCase();
  if (body.title !== undefined) next.title = trimmedOrNull(body.title);
  if (body.icon !== undefined) next.icon = trimmedOrNull(body.icon);
  if (body.capabilities !== undefined) next.capabilities = trimmedOrNull(body.capabilities);
  if (body.reportsTo !== undefined) {
    next.reports_to = body.reportsTo === null ? null : body.reportsTo.toLowerCase();
    if (next.reports_to !== null && next.reports_to !== before.reports_to) await assertValidManager(db, before.company_id, next.reports_to, before.id);
  }
  if (body.adapterType !== undefined) next.adapter_type = body.adapterType;
  if (body.budgetMonthlyCents !== undefined) next.budget_monthly_cents = body.budgetMonthlyCents;
  if (body.metadata !== undefined) next.metadata = body.metadata === null ? null : restoreMasked(body.metadata, before.metadata, 'metadata') as Record<string, unknown>;
  if (body.runtimeConfig !== undefined) next.runtime_config = restoreMasked(body.runtimeConfig, before.runtime_config, 'runtimeConfig') as Record<string, unknown>;
  const stored = isPlainObject(before.adapter_config) ? before.adapter_config : {};
  if (body.adapterConfig !== undefined || body.desiredSkills !== undefined || body.adapterType !== undefined) {
    let config = stored;
    if (body.adapterConfig !== undefined) config = options.replaceAdapterConfig ? replaceConfig(stored, body.adapterConfig) : mergeAdapterConfig(stored, body.adapterConfig);
    // The desired skills change only through desiredSkills: no adapterConfig edit (a merge, a
    // replace naming the slot, a rollback) can drop or rewrite them.
    config = keepSkillSync(stored, config);
    config = withDesiredSkills(config, body.desiredSkills);
    validateAdapterEnv(config);
    config = ensureDeviceKey(next.adapter_type, config);
    await assertSecretRefsBelongToCompany(db, before.company_id, config);
    next.adapter_config = config;
  }
  return next;
}

/** The adapterConfig a patch would store, before the write (what a contributing plugin is asked to validate). */
export function prospectiveAdapterConfig(stored: unknown, incoming: Record<string, unknown> | undefined, replace: boolean): Record<string, unknown> {
  const base = isPlainObject(stored) ? stored : {};
  if (incoming === undefined) return { ...base };
  return replace ? replaceConfig(base, incoming) : mergeAdapterConfig(base, incoming);
}

function keepSkillSync(stored: Record<string, unknown>, config: Record<string, unknown>): Record<string, unknown> {
  const { [SKILL_SYNC_KEY]: _dropped, ...rest } = config;
  return stored[SKILL_SYNC_KEY] === undefined ? rest : { ...rest, [SKILL_SYNC_KEY]: stored[SKILL_SYNC_KEY] };
}

function replaceConfig(stored: Record<string, unknown>, incoming: Record<string, unknown>): Record<string, unknown> {
  const restored = restoreMasked(incoming, stored, 'adapterConfig') as Record<string, unknown>;
  const next: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(restored)) if (value !== null) next[key] = value;
  for (const key of PRESERVED_ON_REPLACE) {
    if (!Object.hasOwn(restored, key) && stored[key] !== undefined) next[key] = stored[key];
  }
  return next;
}
