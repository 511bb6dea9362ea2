import { KeelError } from '../../../http/errors.ts';
import { toRun } from '../../../runs/run-ledger.ts';
import { MAX_RUN_CONTEXT_BYTES, MAX_RUNS_GET, runsRead as spec, type RecentRunsFilter, type RunSummary } from '../../../../sdk/capabilities/runs.ts';
import type { Row } from '../../../db/database.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const RECENT_RUNS_DEFAULT = 50;

/** The run ledger, read (runs.read): runs of the call's company. */
const runsRead: KernelCapability<'db'> = {
  methods: {
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
  },
};

/** A ledger row as the issue routes answer it. */
function runSummary(row: Row): RunSummary {
  const run = toRun(row);
  return {
    runId: run.runId, status: run.status, agentId: run.agentId, adapterType: run.adapterType, startedAt: run.startedAt,
    finishedAt: run.finishedAt, createdAt: run.createdAt, invocationSource: run.invocationSource,
  };
}

/** A run's context snapshot (the registry's schema has checked its shape), bounded in size; undefined when none is given. */
export function contextArg(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new KeelError(400, 'invalid_arguments', 'context must be an object');
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_RUN_CONTEXT_BYTES) {
    throw new KeelError(400, 'invalid_arguments', `context must be at most ${MAX_RUN_CONTEXT_BYTES} bytes of JSON`);
  }
  return value as Record<string, unknown>;
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { runs: runsRead.methods } });
