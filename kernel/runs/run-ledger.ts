import type { AgentJwt } from '../auth/agent-jwt.ts';
import type { AuthCache } from '../auth/auth-cache.ts';
import { iso, prepared, type Database, type Queryable, type Row, type Tx } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';
import { conflict, KeelError, notFound } from '../http/errors.ts';

/** The statements of every run, planned once per connection (kernel/db/database.ts). */
const RUN_FOR_TOKEN = prepared('run_for_token', `
  select r.agent_id, r.company_id, r.status, a.adapter_type, greatest(1, floor(extract(epoch from r.token_expires_at - now())))::int as ttl
    from runs r join agents a on a.id = r.agent_id where r.id = $1`);
const RUN_BY_ID = prepared('run_by_id', 'select id, agent_id, company_id, status from runs where id = $1');
const CLOSE_RUN = prepared('run_close', `
  update runs set status = $1, close_reason = $2, finished_at = now() where id = $3 and status in ('queued', 'running') returning *`);

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
export const LIVE_STATUSES: ReadonlySet<string> = new Set(['queued', 'running']);
const CLOSED_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'timed_out']);
const REFUSED_AGENT_STATUSES = new Set(['terminated', 'pending_approval', 'paused']);

export interface RunRecord {
  runId: string;
  companyId: string;
  agentId: string;
  status: RunStatus;
  invocationSource: string;
  adapterType: string | null;
  startedAt: string;
  finishedAt: string | null;
  createdAt: string;
  closeReason: string | null;
}

export interface OpenedRun { run: RunRecord; token: string; tokenExpiresAt: string }

/**
 * The run ledger: a run is opened for an agent, verified while it is live, and closed.
 * Opening mints the short-lived agent JWT (claim `run_id`) that the run receives as
 * SERVICE_API_KEY. The token is valid only while its run is live: closing the run evicts it
 * from every kernel process's cache (NOTIFY), so the token is refused at once, before it
 * expires. This is the primitive the agent runtime uses through a capability.
 */
export class RunLedger {
  private readonly db: Database;
  private readonly jwt: AgentJwt;
  private readonly cache: AuthCache;
  private readonly invalidate: (tx: Tx, invalidation: { type: 'run'; id: string }) => Promise<void>;
  private readonly events: EventBus;

  constructor(deps: { db: Database; jwt: AgentJwt; cache: AuthCache; invalidate: (tx: Tx, invalidation: { type: 'run'; id: string }) => Promise<void>; events: EventBus }) {
    this.db = deps.db;
    this.jwt = deps.jwt;
    this.cache = deps.cache;
    this.invalidate = deps.invalidate;
    this.events = deps.events;
  }

  async open(tx: Tx, input: { companyId: string; agentId: string; invocationSource?: string; trigger?: string; context?: unknown; openedByPlugin?: string; ttlSeconds?: number; confirm?: { call: string; by: Date } }): Promise<OpenedRun> {
    const agent = await tx.maybeOne('select id, company_id, status, adapter_type from agents where id = ? and company_id = ? for share', [input.agentId, input.companyId]);
    if (!agent) throw notFound('Agent not found');
    if (REFUSED_AGENT_STATUSES.has(agent.status)) throw conflict(`Cannot open a run for an agent that is ${agent.status}`, { status: agent.status }, 'agent_not_runnable');
    const ttl = Math.min(input.ttlSeconds ?? this.jwt.ttlSeconds, 24 * 3600);
    const row = await tx.maybeOne(
      `insert into runs (company_id, agent_id, status, invocation_source, trigger_detail, adapter_type, opened_by_plugin, context, token_expires_at, opened_by_call, confirm_by)
       values (?, ?, 'running', ?, ?, ?, ?, ?::jsonb, now() + make_interval(secs => ?), ?, ?) returning *`,
      [input.companyId, input.agentId, input.invocationSource ?? 'on_demand', input.trigger ?? null, agent.adapter_type,
        input.openedByPlugin ?? null, input.context === undefined ? null : JSON.stringify(input.context), ttl, input.confirm?.call ?? null, input.confirm?.by ?? null]);
    const run = toRun(row!);
    const token = await this.jwt.sign({ agentId: input.agentId, companyId: input.companyId, adapterType: agent.adapter_type, runId: run.runId, ttlSeconds: ttl });
    return { run, token, tokenExpiresAt: iso(row!.token_expires_at)! };
  }

  /**
   * A run token for a live run, expiring when the token minted at open does: what the executor
   * hands the run's process as SERVICE_API_KEY (the ledger keeps no token, only its expiry).
   */
  async tokenFor(db: Queryable, runId: string): Promise<string> {
    const row = await db.maybeOne<Row>(RUN_FOR_TOKEN, [runId]);
    if (!row) throw notFound('Run not found');
    if (!LIVE_STATUSES.has(row.status)) throw conflict(`Run is already ${row.status}`, { status: row.status }, 'run_already_closed');
    return this.jwt.sign({ agentId: row.agent_id, companyId: row.company_id, adapterType: row.adapter_type, runId, ttlSeconds: row.ttl });
  }

  /** Whether a run is live and belongs to the agent and company; cached, evicted on close. */
  async isLive(runId: string, agentId: string, companyId: string): Promise<boolean> {
    const run = await this.liveRun(runId);
    return run !== undefined && run.agentId === agentId && run.companyId === companyId;
  }

  /**
   * The agent and company of a run that is live (queued or running), or undefined for a run
   * that is closed or unknown. One primary-key lookup, cached: closing a run evicts it in this
   * process at once and in every other one through the auth cache's NOTIFY, as for run tokens.
   */
  async liveRun(runId: string): Promise<{ agentId: string; companyId: string } | undefined> {
    let cached = this.cache.runs.get(runId);
    if (!cached) {
      const since = this.cache.epoch;
      const row = await this.db.maybeOne<{ id: string; agent_id: string; company_id: string; status: string }>(RUN_BY_ID, [runId]);
      if (!row) return undefined;
      cached = { id: row.id, agentId: row.agent_id, companyId: row.company_id, live: LIVE_STATUSES.has(row.status) };
      this.cache.runs.set(runId, cached, since);
    }
    return cached.live ? { agentId: cached.agentId, companyId: cached.companyId } : undefined;
  }

  /** Closes a live run. Its usage and result are not the ledger's: the plugin that ran it keeps them (the runtime's runs). */
  async close(tx: Tx, runId: string, input: { status: RunStatus; reason?: string }): Promise<RunRecord> {
    if (!CLOSED_STATUSES.has(input.status)) throw new KeelError(400, 'invalid_run_status', `A run closes as one of ${[...CLOSED_STATUSES].join(', ')}`);
    const row = await tx.maybeOne(CLOSE_RUN, [input.status, input.reason ?? null, runId]);
    if (!row) {
      const existing = await tx.maybeOne('select status from runs where id = ?', [runId]);
      if (!existing) throw notFound('Run not found');
      throw conflict(`Run is already ${existing.status}`, { status: existing.status }, 'run_already_closed');
    }
    // Evict now in this process (the cache must not serve the closed run even before commit
    // completes elsewhere) and everywhere after commit.
    this.cache.apply({ type: 'run', id: runId });
    await this.invalidate(tx, { type: 'run', id: runId });
    const run = toRun(row);
    // Durable, in the closing transaction: whatever the run held (an issue's checkout) is
    // released by its subscribers however the run ended.
    await this.events.emit(tx, 'run.closed', { companyId: run.companyId, runId: run.runId, agentId: run.agentId, status: run.status, reason: run.closeReason });
    return run;
  }

  async get(db: Queryable, runId: string): Promise<RunRecord | undefined> {
    const row = await db.maybeOne('select * from runs where id = ?', [runId]);
    return row ? toRun(row) : undefined;
  }
}

export function toRun(row: Row): RunRecord {
  return {
    runId: row.id,
    companyId: row.company_id,
    agentId: row.agent_id,
    status: row.status,
    invocationSource: row.invocation_source,
    adapterType: row.adapter_type ?? null,
    startedAt: iso(row.started_at)!,
    finishedAt: iso(row.finished_at),
    createdAt: iso(row.created_at)!,
    closeReason: row.close_reason ?? null,
  };
}
