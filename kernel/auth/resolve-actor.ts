import type { Context } from 'koa';
import type { KeelConfig } from '../config/schema.ts';
import type { Database } from '../db/database.ts';
import { forbidden, unauthorized } from '../http/errors.ts';
import { LOCAL_BOARD_USER_ID, type Actor, type AgentActor, type BoardActor } from './actor.ts';
import type { AgentJwt } from './agent-jwt.ts';
import { looksLikeJwt } from './agent-jwt.ts';
import type { AuthCache, CachedAgent, CachedCredential, CachedUser } from './auth-cache.ts';
import type { LastUsedRecorder } from './last-used.ts';
import { attachRunHeader, type LiveRunLookup } from './run-header.ts';
import { BOARD_KEY_PREFIX, hashToken } from './tokens.ts';

export const SESSION_COOKIE = 'keel_session';
const REFUSED_AGENT_STATUSES = new Set(['terminated', 'pending_approval']);

/**
 * The spec's actor resolution order: a bearer token is tried as a board API key, then an
 * agent API key, then a local agent JWT; without one, local_trusted yields the implicit
 * local board and authenticated mode the browser session. A valid bearer token always wins
 * over cookies; an invalid one leaves the request unauthenticated. The run a caller acts for
 * comes from a run-bound JWT's claim (checked live here) or from `X-Service-Run-Id`, which
 * kernel/auth/run-header.ts checks against the run ledger before it becomes part of the actor.
 */
export class ActorResolver {
  private readonly config: KeelConfig;
  private readonly db: Database;
  private readonly cache: AuthCache;
  private readonly jwt: AgentJwt;
  private readonly lastUsed: LastUsedRecorder;
  private readonly liveRun: LiveRunLookup;

  constructor(deps: { config: KeelConfig; db: Database; cache: AuthCache; jwt: AgentJwt; lastUsed: LastUsedRecorder; liveRun: LiveRunLookup }) {
    this.config = deps.config;
    this.db = deps.db;
    this.cache = deps.cache;
    this.jwt = deps.jwt;
    this.lastUsed = deps.lastUsed;
    this.liveRun = deps.liveRun;
  }

  async resolve(ctx: Context): Promise<Actor> {
    return attachRunHeader(await this.caller(ctx), ctx.get('x-service-run-id'), this.liveRun);
  }

  /**
   * The actor of a Keel credential a route found in another header than Authorization (a model
   * client's `x-api-key`): an agent key, a run token or a board key, checked like a bearer token.
   * Anything it cannot accept (unknown, an ended run's token, a terminated agent) is anonymous:
   * the route answers the refusal in its own shape.
   */
  async resolveToken(ctx: Context, token: string): Promise<Actor> {
    try {
      const actor = (await this.fromBearer(token.trim(), ctx.path)) ?? { kind: 'anonymous' as const };
      return actor.kind === 'anonymous' ? actor : await attachRunHeader(actor, ctx.get('x-service-run-id'), this.liveRun);
    } catch (error) {
      if ((error as { status?: number }).status === 401 || (error as { status?: number }).status === 403) return { kind: 'anonymous' };
      throw error;
    }
  }

  /** Who is calling, from the credentials alone; the only run id it carries is a run token's. */
  private async caller(ctx: Context): Promise<Actor> {
    const authorization = ctx.get('authorization');
    const bearer = /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim();
    if (bearer) return (await this.fromBearer(bearer, ctx.path)) ?? { kind: 'anonymous' };
    if (this.config.deploymentMode === 'local_trusted') return this.localBoard();
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    if (cookie) {
      const actor = await this.fromSession(cookie);
      if (actor) return actor;
    }
    return { kind: 'anonymous' };
  }

  localBoard(): BoardActor {
    return { kind: 'board', source: 'local_implicit', userId: LOCAL_BOARD_USER_ID, isInstanceAdmin: true, isLocalBoard: true, companyIds: [] };
  }

  private async fromBearer(token: string, path: string): Promise<Actor | undefined> {
    // API keys are `svc_` tokens without dots, so a JWT-shaped token can only be a JWT:
    // deciding by shape first spares every JWT request two key lookups that cannot match.
    if (looksLikeJwt(token)) return this.fromJwt(token, path);
    const hash = hashToken(token);
    let credential = this.cache.credentials.get(hash);
    if (!credential) {
      const since = this.cache.epoch;
      credential = await this.lookupCredential(hash, token.startsWith(BOARD_KEY_PREFIX));
      if (credential) this.cache.credentials.set(hash, credential, since);
    }
    if (credential?.kind === 'board_key') {
      this.lastUsed.touch('board_api_keys', credential.id);
      return this.boardFromKey(credential);
    }
    if (credential?.kind === 'agent_key') {
      const agent = await this.agent(credential.agentId!);
      if (!agent || agent.companyId !== credential.companyId) return undefined;
      this.refuseInactive(agent);
      this.lastUsed.touch('agent_api_keys', credential.id);
      return agentActor(agent, 'agent_key', undefined, credential.id);
    }
    return undefined;
  }

  private async fromJwt(token: string, path: string): Promise<Actor | undefined> {
    const claims = await this.jwt.verify(token);
    if (!claims) return undefined;
    const agent = await this.agent(claims.sub);
    if (!agent || agent.companyId !== claims.company_id) return undefined;
    this.refuseInactive(agent);
    const run = claims.run_id ? await this.liveRun(claims.run_id) : undefined;
    if (claims.run_id && (run?.agentId !== agent.id || run.companyId !== agent.companyId)) {
      // A closed run revokes its token everywhere; the run-bound secret routes answer 403 as the spec asks.
      if (path.startsWith('/api/agents/me/secrets')) throw forbidden('Secret routes require an agent token bound to a live run', 'run_bound_token_required');
      throw unauthorized('Agent token belongs to a run that is no longer live');
    }
    return agentActor(agent, 'agent_jwt', claims.run_id, undefined);
  }

  private refuseInactive(agent: CachedAgent): void {
    if (REFUSED_AGENT_STATUSES.has(agent.status)) {
      throw unauthorized(agent.status === 'terminated' ? 'Agent is terminated' : 'Agent is pending approval');
    }
  }

  private async lookupCredential(hash: string, boardFirst: boolean): Promise<CachedCredential | undefined> {
    const board = async () => {
      const row = await this.db.maybeOne<{ id: string; user_id: string | null }>(
        'select id, user_id from board_api_keys where key_hash = ? and revoked_at is null', [hash]);
      return row ? { kind: 'board_key' as const, id: row.id, userId: row.user_id } : undefined;
    };
    const agent = async () => {
      const row = await this.db.maybeOne<{ id: string; agent_id: string; company_id: string }>(
        'select id, agent_id, company_id from agent_api_keys where key_hash = ? and revoked_at is null', [hash]);
      return row ? { kind: 'agent_key' as const, id: row.id, agentId: row.agent_id, companyId: row.company_id } : undefined;
    };
    return boardFirst ? (await board()) ?? (await agent()) : (await agent()) ?? (await board());
  }

  async agent(agentId: string): Promise<CachedAgent | undefined> {
    let agent = this.cache.agents.get(agentId);
    if (!agent) {
      const since = this.cache.epoch;
      const row = await this.db.maybeOne<{ id: string; company_id: string; role: string; status: string; adapter_type: string }>(
        'select id, company_id, role, status, adapter_type from agents where id = ?', [agentId]);
      if (!row) return undefined;
      agent = { id: row.id, companyId: row.company_id, role: row.role, status: row.status, adapterType: row.adapter_type };
      this.cache.agents.set(agentId, agent, since);
    }
    return agent;
  }

  async user(userId: string): Promise<CachedUser | undefined> {
    let user = this.cache.users.get(userId);
    if (!user) {
      const since = this.cache.epoch;
      const row = await this.db.maybeOne<{ id: string; is_instance_admin: boolean; company_ids: string[] | null }>(
        `select u.id, u.is_instance_admin,
           array(select m.company_id::text from company_memberships m
                 where m.principal_type = 'user' and m.principal_id = u.id::text and m.status = 'active') as company_ids
         from users u where u.id = ?`, [userId]);
      if (!row) return undefined;
      user = { id: row.id, isInstanceAdmin: row.is_instance_admin, companyIds: row.company_ids ?? [] };
      this.cache.users.set(userId, user, since);
    }
    return user;
  }

  private async boardFromKey(credential: CachedCredential): Promise<BoardActor | undefined> {
    if (!credential.userId) {
      // Minted by the implicit local board: it carries the same full local trust.
      return { kind: 'board', source: 'board_key', userId: LOCAL_BOARD_USER_ID, isInstanceAdmin: true, isLocalBoard: true, companyIds: [], keyId: credential.id };
    }
    const user = await this.user(credential.userId);
    if (!user) return undefined;
    return { kind: 'board', source: 'board_key', userId: user.id, isInstanceAdmin: user.isInstanceAdmin, isLocalBoard: false, companyIds: user.companyIds, keyId: credential.id };
  }

  private async fromSession(token: string): Promise<BoardActor | undefined> {
    const hash = hashToken(token);
    let credential = this.cache.credentials.get(hash);
    if (!credential) {
      const since = this.cache.epoch;
      const row = await this.db.maybeOne<{ id: string; user_id: string; expires_at: string }>(
        'select id, user_id, expires_at from user_sessions where token_hash = ? and expires_at > now()', [hash]);
      if (!row) return undefined;
      credential = { kind: 'session', id: row.id, userId: row.user_id, expiresAt: new Date(row.expires_at).getTime() };
      this.cache.credentials.set(hash, credential, since);
    }
    if (credential.kind !== 'session' || (credential.expiresAt ?? 0) < Date.now()) return undefined;
    const user = await this.user(credential.userId!);
    if (!user) return undefined;
    return { kind: 'board', source: 'session', userId: user.id, isInstanceAdmin: user.isInstanceAdmin, isLocalBoard: false, companyIds: user.companyIds, sessionId: credential.id };
  }
}

/** `runId` here is only a run token's run, checked live, hence verified; a header's is added later. */
function agentActor(agent: CachedAgent, source: AgentActor['source'], runId: string | undefined, keyId: string | undefined): AgentActor {
  return { kind: 'agent', source, agentId: agent.id, companyId: agent.companyId, role: agent.role, adapterType: agent.adapterType, keyId, runId, runVerified: runId !== undefined };
}
