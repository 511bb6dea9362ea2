import type { Context } from 'koa';
import type { RouteAuth } from '../../sdk/plugin/manifest.ts';
import type { Actor, AgentActor, BoardActor } from '../auth/actor.ts';
import { actorOf, requireActor, requireAgent, requireBoard, requireInstanceAdmin } from './guards.ts';

/**
 * Who may call a route, declared once per route and read three ways: the route's guard runs
 * from it, the OpenAPI document states it (`x-keel-auth` and `security`), and tests probe it.
 * Kernel and plugin routes share the words of the plugin manifest (`none`, `any`, `board`,
 * `agent`, `instance_admin`); a few kernel routes need a credential no plugin route can ask
 * for, and those kinds are the kernel's own.
 */
export type KernelOnlyAuth = 'session' | 'board_key' | 'agent_run' | 'challenge_secret' | 'signature';
export type RouteAuthKind = RouteAuth | KernelOnlyAuth;

/** The credentials the document names, as OpenAPI security schemes. */
export type SecurityScheme = 'boardApiKey' | 'session' | 'agentApiKey' | 'agentJwt' | 'challengeSecret';

interface AuthKindDeclaration {
  /** What the reference says about the kind. */
  description: string;
  /**
   * The check run before the handler. Kinds without one are checked by the route itself,
   * because what a missing credential means differs per route (a browser session route
   * answers 404 while browser sign-in is off, for example).
   */
  guard?: (ctx: Context) => unknown;
  /** Credentials any one of which may satisfy the kind. */
  schemes: readonly SecurityScheme[];
  /** Whether the implicit local board of a local_trusted instance satisfies it without a credential. */
  localBoard: boolean;
}

const BOARD: readonly SecurityScheme[] = ['boardApiKey', 'session'];
const AGENT: readonly SecurityScheme[] = ['agentApiKey', 'agentJwt'];

export const AUTH_KINDS: Record<RouteAuthKind, AuthKindDeclaration> = {
  none: { description: 'No credentials needed.', schemes: [], localBoard: true },
  any: { description: 'A board user or an agent.', guard: requireActor, schemes: [...BOARD, ...AGENT], localBoard: true },
  board: { description: 'A board user (agents get 403).', guard: requireBoard, schemes: BOARD, localBoard: true },
  agent: { description: 'An agent (board users get 403).', guard: requireAgent, schemes: AGENT, localBoard: false },
  instance_admin: { description: 'An instance administrator (other board users and agents get 403).', guard: requireInstanceAdmin, schemes: BOARD, localBoard: true },
  session: { description: 'A board user signed in through a browser session (authenticated mode only).', schemes: ['session'], localBoard: false },
  board_key: { description: 'A board API key, sent as the bearer token.', schemes: ['boardApiKey'], localBoard: false },
  agent_run: { description: 'An agent JWT bound to a live run of the agent.', guard: requireAgent, schemes: ['agentJwt'], localBoard: false },
  challenge_secret: { description: "The challenge's secret; board users may act without it.", schemes: ['challengeSecret', ...BOARD], localBoard: true },
  signature: { description: "No board or agent credentials: deliveries are authenticated by the endpoint's signature when the manifest declares one.", schemes: [], localBoard: true },
};

/** The actor a handler sees once its route's guard has passed. */
export type ActorFor<A extends RouteAuthKind> =
  A extends 'board' | 'instance_admin' ? BoardActor
    : A extends 'agent' | 'agent_run' ? AgentActor
      : A extends 'any' ? BoardActor | AgentActor
        : Actor;

/** Runs the kind's guard (401/403 as the guards answer) and returns the request's actor. */
export function authorize<A extends RouteAuthKind>(ctx: Context, auth: A): ActorFor<A> {
  AUTH_KINDS[auth].guard?.(ctx);
  return actorOf(ctx) as ActorFor<A>;
}
