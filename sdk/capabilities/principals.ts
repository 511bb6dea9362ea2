import { defineCapability, method } from './define.ts';
import { uuid } from './schemas.ts';

/** A permission grant a principal holds in the company a call serves. */
export interface HeldGrant {
  permissionKey: string;
  /** True for a grant without a scope (it covers the whole company). */
  companyWide: boolean;
}

/** Who a call acts for, with the facts authorisation decisions need. */
export interface ActorFacts {
  /** `board` for a board user (or the implicit local board), `agent` for an agent, `system` otherwise. */
  type: 'board' | 'agent' | 'system';
  /** The agent's id, the board user's id (`local-board` for the implicit local board), or null. */
  id: string | null;
  /** The agent's role; null for board users and the system. */
  role: string | null;
  /** The implicit local board (and the board keys it minted) or an instance administrator. */
  instanceAuthority: boolean;
  /** The grants among the asked-for permission keys that the actor holds in the company. */
  grants: HeldGrant[];
  /**
   * For a board user, the name comments mention them by (`@alice`): the local part of their
   * email, lowercased, each run of characters other than letters, digits and `-` made one `-`;
   * `board` for the implicit local board. Absent for agents and the system.
   */
  mentionHandle?: string | null;
}

/**
 * An agent named by id. `other_company` says only that the id names an agent of another
 * company (nothing of it is read): some APIs must answer that case apart from an unknown id.
 */
export type AgentFacts =
  | { status: 'found'; role: string; grants: HeldGrant[] }
  | { status: 'other_company' | 'not_found'; role: null; grants: [] };

export interface PrincipalsCapability {
  /** The actor the call acts for, and which of `permissionKeys` it holds in the call's company. */
  actor(permissionKeys?: string[]): Promise<ActorFacts>;
  /** An agent named by id: its role and which of `permissionKeys` it holds, when it belongs to the call's company. */
  agent(agentId: string, permissionKeys?: string[]): Promise<AgentFacts>;
}

const permissionKeys = { type: 'array', maxItems: 20, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 100 } };
const heldGrants = {
  type: 'array',
  items: { type: 'object', required: ['permissionKey', 'companyWide'], properties: { permissionKey: { type: 'string' }, companyWide: { type: 'boolean' } } },
};

export const principalsRead = defineCapability<{ principals: PrincipalsCapability }>()({
  id: 'principals.read',
  summary: 'Read who a call acts for, and the role and permission grants of the agents and board users of the company a call serves',
  members: {
    principals: {
      actor: method('kernel', [permissionKeys], {
        type: 'object', required: ['type', 'id', 'role', 'instanceAuthority', 'grants'],
        properties: {
          type: { enum: ['board', 'agent', 'system'] },
          id: { type: ['string', 'null'] },
          role: { type: ['string', 'null'] },
          instanceAuthority: { type: 'boolean' },
          grants: heldGrants,
          mentionHandle: { type: ['string', 'null'] },
        },
      }, { required: 0 }),
      agent: method('kernel', [uuid, permissionKeys], {
        type: 'object', required: ['status', 'role', 'grants'],
        properties: { status: { enum: ['found', 'other_company', 'not_found'] }, role: { type: ['string', 'null'] }, grants: heldGrants },
      }, { required: 1 }),
    },
  },
});
