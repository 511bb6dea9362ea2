/**
 * Who is calling. Resolved once per request by kernel/auth/resolve-actor.ts and stored on
 * `ctx.state.actor`; every guard and every activity entry reads it from there.
 */
export type Actor = BoardActor | AgentActor | AnonymousActor;

export interface BoardActor {
  kind: 'board';
  source: 'local_implicit' | 'session' | 'board_key';
  /** `local-board` for the implicit board of a local_trusted instance. */
  userId: string;
  isInstanceAdmin: boolean;
  /** The implicit board of a local_trusted instance, or a board key it minted: full local trust. */
  isLocalBoard: boolean;
  /** Companies reachable through memberships; `local_implicit` bypasses the check. */
  companyIds: readonly string[];
  keyId?: string;
  sessionId?: string;
  /** From `X-Service-Run-Id`: a live run of a company this board reaches (kernel/auth/run-header.ts). */
  runId?: string;
}

export interface AgentActor {
  kind: 'agent';
  source: 'agent_key' | 'agent_jwt';
  agentId: string;
  companyId: string;
  role: string;
  adapterType: string;
  keyId?: string;
  /** A live run of this agent: its run token's, or one `X-Service-Run-Id` named (checked in the ledger). */
  runId?: string;
  /** True when runId came from the signed `run_id` claim of a JWT whose run was live. */
  runVerified: boolean;
}

/** An unauthenticated caller names no run: `X-Service-Run-Id` is not attached to it. */
export interface AnonymousActor {
  kind: 'anonymous';
  runId?: undefined;
}

export const LOCAL_BOARD_USER_ID = 'local-board';

/**
 * Who a plugin invocation is for (InvocationInfo's actor, runId and runVerified): `runVerified`
 * is true only when the run is the one of the agent's run token, checked live. A run id that
 * came as the `X-Service-Run-Id` header is a live run of the calling agent (the resolver checks
 * it in the ledger), but an agent key that names it has not proved to be that run's process.
 */
export function invocationCaller(actor: Actor): { actor: { type: 'agent' | 'user' | 'system'; id: string; agentId: string | null }; runId: string | null; runVerified: boolean } {
  const who = activityActor(actor);
  return {
    actor: { type: who.actorType, id: who.actorId, agentId: who.agentId }, runId: who.runId,
    runVerified: actor.kind === 'agent' && actor.runVerified === true && who.runId !== null,
  };
}

/** How the activity log names an actor. */
export function activityActor(actor: Actor): { actorType: 'agent' | 'user' | 'system'; actorId: string; agentId: string | null; runId: string | null } {
  if (actor.kind === 'agent') return { actorType: 'agent', actorId: actor.agentId, agentId: actor.agentId, runId: actor.runId ?? null };
  if (actor.kind === 'board') return { actorType: 'user', actorId: actor.userId, agentId: null, runId: actor.runId ?? null };
  return { actorType: 'system', actorId: 'anonymous', agentId: null, runId: null };
}
