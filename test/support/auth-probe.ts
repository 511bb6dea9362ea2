import { expect } from 'vitest';
import type { RouteAuthKind } from '../../kernel/http/route-auth.ts';
import type { Api } from './harness.ts';
import { concretePath, type DocumentOperation } from './openapi.ts';

export type Caller = 'anonymous' | 'agent' | 'board' | 'admin';

/**
 * What each auth kind means for each kind of caller, as the document states it: the status a
 * refused caller gets from the route's guard, or `admitted` for a caller the guard lets
 * through (whatever the route answers next, it is not a refusal of who is calling). Callers
 * a kind neither refuses nor admits outright (a board user on a company route it is not a
 * member of, an agent key on a route that wants a run-bound JWT) are not probed.
 */
const EXPECTED: Record<RouteAuthKind, Partial<Record<Caller, 401 | 403 | 'admitted'>>> = {
  none: { anonymous: 'admitted' },
  signature: { anonymous: 'admitted' },
  any: { anonymous: 401, agent: 'admitted', admin: 'admitted' },
  board: { anonymous: 401, agent: 403, admin: 'admitted' },
  instance_admin: { anonymous: 401, agent: 403, board: 403, admin: 'admitted' },
  agent: { anonymous: 401, board: 403, admin: 403, agent: 'admitted' },
  agent_run: { anonymous: 401, board: 403, agent: 403 },
  session: { anonymous: 401 },
  // Probing admission would revoke the key used.
  board_key: { anonymous: 401, agent: 403 },
  challenge_secret: { anonymous: 401, agent: 403, admin: 'admitted' },
};

/** Codes of the guards themselves: an admitted caller never gets one of these. */
const GUARD_CODES = new Set(['unauthorized', 'board_required', 'agent_required', 'instance_admin_required', 'run_bound_token_required']);

/**
 * Calls every operation as each kind of caller (ids in paths are unknown uuids, bodies are
 * empty) and returns what disagrees with the operation's `x-keel-auth`. Run against a
 * throwaway instance in authenticated mode: admitted calls may change things, and
 * `refusalsOnly` leaves them out where a handler must not run at all.
 */
export async function authMismatches(api: Api, operations: DocumentOperation[], tokens: Record<Exclude<Caller, 'anonymous'>, string>, options: { refusalsOnly?: boolean } = {}): Promise<string[]> {
  const mismatches: string[] = [];
  for (const { method, path, operation } of operations) {
    const auth = operation['x-keel-auth'] as RouteAuthKind;
    expect(Object.keys(EXPECTED), `${method} ${path}`).toContain(auth);
    for (const [caller, expected] of Object.entries(EXPECTED[auth]) as Array<[Caller, 401 | 403 | 'admitted']>) {
      if (expected === 'admitted' && options.refusalsOnly) continue;
      const token = caller === 'anonymous' ? undefined : tokens[caller];
      const res = await api.request(method, concretePath(path), { token, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      const refusedByGuard = res.status === 401 || (res.status === 403 && GUARD_CODES.has(res.body?.code));
      const ok = expected === 'admitted' ? !refusedByGuard : res.status === expected;
      if (!ok) mismatches.push(`${method} ${path} (${auth}) as ${caller}: expected ${expected}, got ${res.status} ${res.body?.code ?? ''}`);
    }
  }
  return mismatches;
}
