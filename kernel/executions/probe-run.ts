import type { Database, Row } from '../db/database.ts';
import type { RunLedger } from '../runs/run-ledger.ts';

/** Where a probe's run comes from, in the ledger (runs.invocation_source). */
export const PROBE_INVOCATION_SOURCE = 'adapter_test';

export interface ProbeRun { runId: string; token: string; close(outcome: 'succeeded' | 'failed'): Promise<void> }

/**
 * The run of a probe that asked for `tokenVariables`: a tool whose model calls go through Keel's
 * model gateway authenticates there with a run token, and the gateway meters and budgets the
 * call as the agent's. Opened in the ledger like any run (a paused or held agent is refused, 409
 * `agent_not_runnable`), its token living no longer than the probe's deadline and a minute, and
 * closed when the probe ends, which revokes the token at once.
 */
export async function probeRun(executor: { deps: { db: Database; runs: RunLedger } }, plugin: string, agent: Row, ttlSeconds: number): Promise<ProbeRun> {
  const { db, runs } = executor.deps;
  const opened = await db.transaction((tx) => runs.open(tx, {
    companyId: agent.company_id, agentId: agent.id, invocationSource: PROBE_INVOCATION_SOURCE, trigger: 'probe', openedByPlugin: plugin, ttlSeconds,
  }));
  return {
    runId: opened.run.runId,
    token: opened.token,
    close: async (outcome) => {
      await db.transaction(async (tx) => {
        const live = await tx.maybeOne<Row>(`select status from runs where id = ? and status in ('queued', 'running') for update`, [opened.run.runId]);
        if (live) await runs.close(tx, opened.run.runId, { status: outcome, reason: `probe ${outcome}` });
      });
    },
  };
}
