import { principalsRead as spec } from '../../../../sdk/capabilities/principals.ts';
import type { ActorFacts, AgentFacts, HeldGrant } from '../../../../sdk/capabilities/principals.ts';
import { LOCAL_BOARD_USER_ID } from '../../../auth/actor.ts';
import { isUuid } from '../../../http/validate.ts';
import { callCompany, uuidArg } from '../scope.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/** The permission keys a call asked about (the registry checked their shape); none when omitted. */
function keysOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((key): key is string => typeof key === 'string') : [];
}

/** Which of `keys` the principal holds in the company; a grant without a scope (null or `{}`) covers the whole company. */
async function heldGrants(call: BrokeredCall<'db' | 'resolver'>, companyId: string, principalType: 'user' | 'agent', principalId: string, keys: string[]): Promise<HeldGrant[]> {
  if (keys.length === 0) return [];
  const rows = await call.kernel.db.query<{ permission_key: string; company_wide: boolean }>(
    `select permission_key, (scope is null or scope = '{}'::jsonb) as company_wide from permission_grants
      where company_id = ? and principal_type = ? and principal_id = ? and permission_key in (select jsonb_array_elements_text(?::jsonb))
      order by permission_key`,
    [companyId, principalType, principalId, JSON.stringify(keys)]);
  return rows.map((row) => ({ permissionKey: row.permission_key, companyWide: row.company_wide }));
}

const LOCAL_BOARD_HANDLE = 'board';

/** The name comments mention a board user by: the local part of their email, as a `@name` can spell it. */
async function mentionHandle(call: BrokeredCall<'db' | 'resolver'>, userId: string): Promise<string | null> {
  const row = await call.kernel.db.maybeOne<{ email: string }>('select email from users where id = ?', [userId]);
  const local = row?.email.split('@')[0]?.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);
  return local || null;
}

/**
 * Facts about principals for authorisation decisions a plugin makes (principals.read). Roles
 * and instance-admin flags come from the auth cache (evicted by trigger on every change), grants
 * from the database; everything is read in the call's company.
 */
const principalsCapability: KernelCapability<'db' | 'resolver'> = {
  methods: {
    actor: {
      run: async (call): Promise<ActorFacts> => {
        const companyId = callCompany(call);
        const keys = keysOf(call.args[0]);
        const { actor } = call.info;
        if (actor.type === 'agent' && actor.agentId) {
          const agent = await call.kernel.resolver.agent(actor.agentId);
          // An agent acts only in its own company; anything else gets no facts at all.
          if (agent?.companyId !== companyId) return { type: 'agent', id: actor.agentId, role: null, instanceAuthority: false, grants: [] };
          return { type: 'agent', id: agent.id, role: agent.role, instanceAuthority: false, grants: await heldGrants(call, companyId, 'agent', agent.id, keys) };
        }
        if (actor.type === 'user') {
          if (actor.id === LOCAL_BOARD_USER_ID) return { type: 'board', id: actor.id, role: null, instanceAuthority: true, grants: [], mentionHandle: LOCAL_BOARD_HANDLE };
          const user = isUuid(actor.id) ? await call.kernel.resolver.user(actor.id) : undefined;
          return {
            type: 'board', id: actor.id, role: null, instanceAuthority: user?.isInstanceAdmin ?? false,
            grants: user ? await heldGrants(call, companyId, 'user', user.id, keys) : [], mentionHandle: user ? await mentionHandle(call, user.id) : null,
          };
        }
        return { type: 'system', id: null, role: null, instanceAuthority: false, grants: [] };
      },
    },
    agent: {
      run: async (call): Promise<AgentFacts> => {
        const companyId = callCompany(call);
        const agentId = uuidArg(call.args[0], 'agentId');
        const agent = await call.kernel.resolver.agent(agentId);
        if (!agent) return { status: 'not_found', role: null, grants: [] };
        // Only that the id names another company's agent: none of its facts.
        if (agent.companyId !== companyId) return { status: 'other_company', role: null, grants: [] };
        return { status: 'found', role: agent.role, grants: await heldGrants(call, companyId, 'agent', agent.id, keysOf(call.args[1])) };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db', 'resolver'] }, serves: { principals: principalsCapability.methods } });
