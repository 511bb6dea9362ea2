import { iso, type Queryable } from '../db/database.ts';
import { unprocessable } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';
import { isPlainObject } from './agent-config.ts';

/**
 * Permission grants: a principal (user or agent) holds a permission key in a company,
 * optionally narrowed by a structured scope. Company memberships of agents live here too,
 * because the task-assignment grant travels with one.
 */
export const PERMISSION_KEYS = [
  'agents:create',
  'tasks:assign',
  'tasks:assign_scope',
  'tasks:manage_active_checkouts',
  'environments:manage',
  'users:invite',
  'users:manage_permissions',
  'joins:approve',
] as const;

export type PermissionKey = (typeof PERMISSION_KEYS)[number];
export type PrincipalType = 'user' | 'agent';

export interface GrantRow {
  id: string;
  company_id: string;
  principal_type: PrincipalType;
  principal_id: string;
  permission_key: string;
  scope: Record<string, unknown> | null;
  granted_by_user_id: string | null;
  granted_by_agent_id: string | null;
  created_at: string;
  updated_at: string;
}

export function toGrantJson(row: GrantRow): Record<string, unknown> {
  return {
    id: row.id,
    companyId: row.company_id,
    principalType: row.principal_type,
    principalId: row.principal_id,
    permissionKey: row.permission_key,
    scope: row.scope ?? null,
    grantedByUserId: row.granted_by_user_id,
    grantedByAgentId: row.granted_by_agent_id,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function toMembershipJson(row: Record<string, any>): Record<string, unknown> {
  return {
    id: row.id,
    companyId: row.company_id,
    principalType: row.principal_type,
    principalId: row.principal_id,
    role: row.role,
    status: row.status,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

const SINGLE_ID_KEYS = ['projectId', 'agentId', 'assigneeAgentId', 'targetAgentId', 'managerAgentId', 'subtreeRootAgentId'] as const;
const ID_LIST_KEYS = ['projectIds', 'agentIds', 'assigneeAgentIds', 'targetAgentIds'] as const;
export const SCOPE_KEYS = [...SINGLE_ID_KEYS, ...ID_LIST_KEYS, 'allow'] as const;
const ALLOW_ENTRY = /^(project|agent|subtree):([0-9a-fA-F-]{36})$/;

/**
 * Checks a grant scope and returns it with ids lower-cased. Unknown keys are refused so that
 * a misspelt key cannot silently widen a grant to company-wide. Returns the agent ids the
 * scope names, for the caller to check against the company.
 */
export function normalizeScope(scope: unknown, permissionKey: string): { scope: Record<string, unknown> | null; agentIds: string[] } {
  const empty = scope === undefined || scope === null || (isPlainObject(scope) && Object.keys(scope).length === 0);
  if (empty) {
    if (permissionKey === 'tasks:assign_scope') {
      throw unprocessable('tasks:assign_scope requires a non-empty scope', { field: 'scope' }, 'invalid_grant_scope');
    }
    return { scope: null, agentIds: [] };
  }
  if (!isPlainObject(scope)) throw unprocessable('scope must be an object', { field: 'scope' }, 'invalid_grant_scope');
  const out: Record<string, unknown> = {};
  const agentIds: string[] = [];
  let entries = 0;
  for (const [key, value] of Object.entries(scope)) {
    const path = `scope.${key}`;
    if ((SINGLE_ID_KEYS as readonly string[]).includes(key)) {
      if (!isUuid(value)) throw unprocessable(`${path} must be a uuid`, { field: path }, 'invalid_grant_scope');
      out[key] = value.toLowerCase();
      if (key !== 'projectId') agentIds.push(out[key] as string);
      entries++;
    } else if ((ID_LIST_KEYS as readonly string[]).includes(key)) {
      if (!Array.isArray(value) || value.length === 0 || !value.every(isUuid)) {
        throw unprocessable(`${path} must be a non-empty array of uuids`, { field: path }, 'invalid_grant_scope');
      }
      out[key] = [...new Set(value.map((id) => id.toLowerCase()))];
      if (key !== 'projectIds') agentIds.push(...(out[key] as string[]));
      entries += value.length;
    } else if (key === 'allow') {
      if (!Array.isArray(value) || value.length === 0) throw unprocessable(`${path} must be a non-empty array`, { field: path }, 'invalid_grant_scope');
      const allow: string[] = [];
      for (const item of value) {
        const match = typeof item === 'string' ? ALLOW_ENTRY.exec(item) : null;
        if (!match || !isUuid(match[2])) {
          throw unprocessable(`${path} entries must look like project:<id>, agent:<id> or subtree:<id>`, { field: path, value: item }, 'invalid_grant_scope');
        }
        allow.push(`${match[1]}:${match[2]!.toLowerCase()}`);
        if (match[1] !== 'project') agentIds.push(match[2]!.toLowerCase());
      }
      out.allow = [...new Set(allow)];
      entries += allow.length;
    } else {
      throw unprocessable(`Unknown scope key '${key}'; allowed keys: ${SCOPE_KEYS.join(', ')}`, { field: path }, 'invalid_grant_scope');
    }
  }
  if (entries === 0 && permissionKey === 'tasks:assign_scope') {
    throw unprocessable('tasks:assign_scope requires a non-empty scope', { field: 'scope' }, 'invalid_grant_scope');
  }
  return { scope: out, agentIds: [...new Set(agentIds)] };
}

export async function listGrants(db: Queryable, companyId: string, filter: { principalType?: string; principalId?: string } = {}): Promise<GrantRow[]> {
  return db.query<GrantRow>(
    `select * from permission_grants where company_id = ?
       and (?::text is null or principal_type = ?) and (?::text is null or principal_id = ?)
     order by principal_type, principal_id, permission_key`,
    [companyId, filter.principalType ?? null, filter.principalType ?? null, filter.principalId ?? null, filter.principalId ?? null],
  );
}

export async function findGrant(db: Queryable, companyId: string, principalType: PrincipalType, principalId: string, key: string): Promise<GrantRow | undefined> {
  return db.maybeOne<GrantRow>(
    'select * from permission_grants where company_id = ? and principal_type = ? and principal_id = ? and permission_key = ?',
    [companyId, principalType, principalId, key],
  );
}

export async function hasGrant(db: Queryable, companyId: string, principalType: PrincipalType, principalId: string, key: string): Promise<boolean> {
  return (await findGrant(db, companyId, principalType, principalId, key)) !== undefined;
}

export interface GrantInput {
  companyId: string;
  principalType: PrincipalType;
  principalId: string;
  permissionKey: string;
  scope: Record<string, unknown> | null;
  grantedByUserId: string | null;
  grantedByAgentId: string | null;
}

/** Insert or replace the scope of the principal's grant for the key; `created` tells which. */
export async function upsertGrant(db: Queryable, input: GrantInput): Promise<{ grant: GrantRow; created: boolean }> {
  const rows = await db.query<GrantRow & { inserted: boolean }>(
    `insert into permission_grants (company_id, principal_type, principal_id, permission_key, scope, granted_by_user_id, granted_by_agent_id)
     values (?, ?, ?, ?, ?::jsonb, ?, ?)
     on conflict (company_id, principal_type, principal_id, permission_key)
     do update set scope = excluded.scope, granted_by_user_id = excluded.granted_by_user_id,
                   granted_by_agent_id = excluded.granted_by_agent_id, updated_at = now()
     returning *, (xmax = 0) as inserted`,
    [input.companyId, input.principalType, input.principalId, input.permissionKey,
      input.scope === null ? null : JSON.stringify(input.scope), input.grantedByUserId, input.grantedByAgentId],
  );
  const { inserted, ...grant } = rows[0]!;
  return { grant: grant as GrantRow, created: inserted };
}

export async function deleteGrant(db: Queryable, companyId: string, principalType: PrincipalType, principalId: string, key: string): Promise<boolean> {
  return (await db.exec(
    'delete from permission_grants where company_id = ? and principal_type = ? and principal_id = ? and permission_key = ?',
    [companyId, principalType, principalId, key],
  )) > 0;
}

export async function findMembership(db: Queryable, companyId: string, principalType: PrincipalType, principalId: string): Promise<Record<string, any> | undefined> {
  return db.maybeOne('select * from company_memberships where company_id = ? and principal_type = ? and principal_id = ?', [companyId, principalType, principalId]);
}

/** An agent that may be assigned work or assign it is an active member of its company. */
export async function ensureActiveAgentMembership(db: Queryable, companyId: string, agentId: string): Promise<void> {
  await db.exec(
    `insert into company_memberships (company_id, principal_type, principal_id, role, status)
     values (?, 'agent', ?, 'member', 'active')
     on conflict (company_id, principal_type, principal_id)
     do update set status = 'active', updated_at = now() where company_memberships.status <> 'active'`,
    [companyId, agentId],
  );
}
