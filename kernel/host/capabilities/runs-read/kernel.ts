import { KeelError } from '../../http/errors.ts';
import { toRun } from '../../runs/run-ledger.ts';
import { MAX_RUN_CONTEXT_BYTES, MAX_RUNS_GET, type RecentRunsFilter, type RunSummary } from '../../../sdk/capabilities/runs.ts';
import type { Row } from '../../db/database.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from './scope.ts';
import type { KernelCapability } from './types.ts';
import { confirmationOf, rememberOpenedRun } from './runs-of-failed-calls.ts';

const RECENT_RUNS_DEFAULT = 50;
const CLOSE_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'timed_out']);

/** The run ledger, as the agent runtime plugin reaches it. */
export const runsCapability: KernelCapability = {
  methods: {
    open: {
      run: async (call) => {
        const input = (call.args[0] ?? {}) as { agentId?: unknown; invocationSource?: unknown; trigger?: unknown; context?: unknown };
        const agentId = uuidArg(input.agentId, 'agentId');
        const context = contextArg(input.context);
        const agent = await call.kernel.db.maybeOne<{ company_id: string }>(`select company_id from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!agent) throw new KeelError(404, 'not_found', 'Agent not found');
        const source = typeof input.invocationSource === 'string' && /^[a-z_]{1,40}$/.test(input.invocationSource) ? input.invocationSource : 'on_demand';
        const confirm = confirmationOf(call);
        const opened = await call.kernel.db.transaction(async (tx) => {
          const result = await call.kernel.runs.open(tx, {
            companyId: agent.company_id, agentId, invocationSource: source, trigger: typeof input.trigger === 'string' ? input.trigger.slice(0, 200) : undefined, openedByPlugin: call.plugin, confirm, context,
          });
          await call.kernel.activity.record(tx, {
            companyId: agent.company_id, actorType: 'system', actorId: `plugin:${call.plugin}`, agentId, runId: result.run.runId,
            action: 'run.opened', entityType: 'run', entityId: result.run.runId, details: { invocationSource: source, plugin: call.plugin },
          });
          return result;
        });
        rememberOpenedRun(call.host, call.info.id, opened.run.runId, call.plugin);
        return { runId: opened.run.runId, token: opened.token, tokenExpiresAt: opened.tokenExpiresAt };
      },
    },
    get: {
      // runs.read: rows of the call's company only, so another company's run is left out like an unknown id.
      run: async (call) => {
        const ids = [...new Set((Array.isArray(call.args[0]) ? call.args[0] : []).map((id) => uuidArg(id, 'runIds[]')))].slice(0, MAX_RUNS_GET);
        if (ids.length === 0) return [];
        const rows = await call.kernel.db.query(
          `select * from runs where id in (select jsonb_array_elements_text(?::jsonb)::uuid) and ${OF_CALL_COMPANY} order by created_at desc, id desc`,
          [JSON.stringify(ids), callCompany(call)]);
        return rows.map(runSummary);
      },
    },
    withContext: {
      // runs.read: the runs of the call's company whose context snapshot holds the given values,
      // newest first. The containment is answered first, by the GIN index of migration 0037 (a
      // materialised step: otherwise the planner may walk the company's runs newest first for the
      // LIMIT and test each one), then narrowed to the call's company.
      run: async (call) => {
        const match = contextArg(call.args[0]);
        if (!match || Object.keys(match).length === 0) throw new KeelError(400, 'invalid_arguments', 'match must name at least one context value');
        const rows = await call.kernel.db.query(
          `with matching as materialized (select * from runs where context @> ?::jsonb)
           select * from matching where ${OF_CALL_COMPANY} order by created_at desc, id desc limit ${MAX_RUNS_GET}`,
          [JSON.stringify(match), callCompany(call)]);
        return rows.map(runSummary);
      },
    },
    recent: {
      // runs.read: the call's company only; the registry checked the filter against its schema.
      run: async (call) => {
        const filter = (call.args[0] ?? {}) as RecentRunsFilter;
        const statuses = filter.statuses ? JSON.stringify(filter.statuses) : null;
        const rows = await call.kernel.db.query(
          `select * from runs where ${OF_CALL_COMPANY}
             and (?::jsonb is null or status in (select jsonb_array_elements_text(?::jsonb)))
             and (?::timestamptz is null or created_at >= ?::timestamptz)
           order by created_at desc, id desc limit ?`,
          [callCompany(call), statuses, statuses, filter.since ?? null, filter.since ?? null, filter.limit ?? RECENT_RUNS_DEFAULT]);
        return rows.map(runSummary);
      },
    },
    close: {
      run: async (call) => {
        const runId = uuidArg(call.args[0], 'runId');
        const input = (call.args[1] ?? {}) as { status?: unknown; reason?: unknown };
        if (typeof input.status !== 'string' || !CLOSE_STATUSES.has(input.status)) throw new KeelError(400, 'invalid_arguments', `status must be one of ${[...CLOSE_STATUSES].join(', ')}`);
        const found = await call.kernel.db.maybeOne<{ company_id: string; agent_id: string }>(`select company_id, agent_id from runs where id = ? and ${OF_CALL_COMPANY}`, [runId, callCompany(call)]);
        if (!found) throw new KeelError(404, 'not_found', 'Run not found');
        const run = { companyId: found.company_id, agentId: found.agent_id };
        const closed = await call.kernel.db.transaction(async (tx) => {
          const result = await call.kernel.runs.close(tx, runId, { status: input.status as 'succeeded', reason: typeof input.reason === 'string' ? input.reason.slice(0, 500) : undefined });
          await call.kernel.activity.record(tx, {
            companyId: run.companyId, actorType: 'system', actorId: `plugin:${call.plugin}`, agentId: run.agentId, runId,
            action: 'run.closed', entityType: 'run', entityId: runId, details: { status: result.status, plugin: call.plugin },
          });
          return result;
        });
        return { runId: closed.runId, status: closed.status };
      },
    },
  },
};

/** A ledger row as the issue routes answer it. */
function runSummary(row: Row): RunSummary {
  const run = toRun(row);
  return {
    runId: run.runId, status: run.status, agentId: run.agentId, adapterType: run.adapterType, startedAt: run.startedAt,
    finishedAt: run.finishedAt, createdAt: run.createdAt, invocationSource: run.invocationSource, usageJson: run.usageJson,
    resultJson: run.resultJson,
    // The ledger stores no run log yet.
    logBytes: null,
  };
}

/** A run's context snapshot (the registry's schema has checked its shape), bounded in size; undefined when none is given. */
function contextArg(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new KeelError(400, 'invalid_arguments', 'context must be an object');
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_RUN_CONTEXT_BYTES) {
    throw new KeelError(400, 'invalid_arguments', `context must be at most ${MAX_RUN_CONTEXT_BYTES} bytes of JSON`);
  }
  return value as Record<string, unknown>;
}
