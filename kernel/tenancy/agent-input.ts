import { badRequest } from '../http/errors.ts';
import { bodyValidator, uuidPattern } from '../http/validate.ts';
import { ADAPTER_TYPE_PATTERN } from './adapter-defaults.ts';

/**
 * Request bodies of the agent write routes. ajv checks types and bounds (400); semantic
 * checks that need the database (manager, shortname, secret references) follow in the
 * service, before anything is written.
 */
export interface AgentFieldsInput {
  name?: string;
  role?: string;
  title?: string | null;
  icon?: string | null;
  capabilities?: string | null;
  reportsTo?: string | null;
  adapterType?: string;
  adapterConfig?: Record<string, unknown>;
  runtimeConfig?: Record<string, unknown>;
  budgetMonthlyCents?: number;
  desiredSkills?: string[];
  metadata?: Record<string, unknown> | null;
}

export interface CreateAgentInput extends AgentFieldsInput { name: string }
export interface HireAgentInput extends CreateAgentInput { sourceIssueId?: string | null; sourceIssueIds?: string[] }
export interface UpdateAgentInput extends AgentFieldsInput { status?: string; replaceAdapterConfig?: boolean; permissions?: unknown }

export const AGENT_STATUSES = ['active', 'paused', 'idle', 'running', 'error', 'pending_approval', 'terminated'] as const;

const nullableText = (max: number) => ({ type: ['string', 'null'], maxLength: max });

export const agentFieldSchemas = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  role: { type: 'string', minLength: 1, maxLength: 64, pattern: '\\S' },
  title: nullableText(200),
  icon: nullableText(200),
  capabilities: nullableText(20_000),
  reportsTo: { type: ['string', 'null'], pattern: uuidPattern },
  adapterType: { type: 'string', pattern: ADAPTER_TYPE_PATTERN },
  adapterConfig: { type: 'object' },
  runtimeConfig: {
    type: 'object',
    properties: {
      heartbeat: {
        type: 'object',
        properties: { enabled: { type: 'boolean' }, intervalSec: { type: 'integer', minimum: 0, maximum: 31_536_000 } },
      },
    },
  },
  budgetMonthlyCents: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  desiredSkills: { type: 'array', maxItems: 500, items: { type: 'string', minLength: 1, maxLength: 300 } },
  metadata: { type: ['object', 'null'] },
};

export const createAgentBody = bodyValidator<CreateAgentInput>({
  type: 'object',
  required: ['name'],
  properties: agentFieldSchemas,
});

export const hireAgentBody = bodyValidator<HireAgentInput>({
  type: 'object',
  required: ['name'],
  properties: {
    ...agentFieldSchemas,
    sourceIssueId: { type: ['string', 'null'], pattern: uuidPattern },
    sourceIssueIds: { type: 'array', maxItems: 100, items: { type: 'string', pattern: uuidPattern } },
  },
});

export const updateAgentBody = bodyValidator<UpdateAgentInput>({
  type: 'object',
  properties: {
    ...agentFieldSchemas,
    status: { enum: [...AGENT_STATUSES] },
    replaceAdapterConfig: { type: 'boolean' },
  },
});

/** Permissions have their own route, so that the audit trail and its guard stay in one place. */
export function refusePermissionsInPatch(body: UpdateAgentInput): void {
  if (Object.hasOwn(body, 'permissions')) {
    throw badRequest('permissions cannot be changed with PATCH /api/agents/{agentId}; use PATCH /api/agents/{agentId}/permissions');
  }
}

export function sourceIssueIds(body: HireAgentInput): string[] {
  const ids = [...(body.sourceIssueIds ?? [])];
  if (body.sourceIssueId) ids.push(body.sourceIssueId);
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

/** Free-text fields are stored trimmed; a blank optional text is stored as null. */
export function trimmedOrNull(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}
