import type { ExecutionSummary } from '@keel/sdk/plugin';
import type { Row, RuntimeContext } from './context.ts';

/**
 * A run's process facts (pid, exit code, signal, HTTP status, log size and SHA-256) are the
 * executor's: read from the run's execution (`ctx.executions.getMany`, one call for a page of
 * runs), never copied into this plugin's runs. The runtime reads the executions it started and
 * those a contributed adapter's plugin started for its runs. Only a contributed adapter's run
 * whose execution the kernel does not have (its plugin drives the run itself) keeps what that
 * plugin reported in this plugin's columns (execution-events.ts), and so do runs of an older
 * version, which copied them: those columns answer when no execution is found.
 */
export async function executionsOf(ctx: RuntimeContext, rows: Row[]): Promise<Map<string, ExecutionSummary>> {
  const ids = [...new Set(rows.filter((row) => row.execution_id).map((row) => String(row.execution_id)))];
  if (ids.length === 0) return new Map();
  return new Map((await ctx.executions.getMany(ids)).map((execution) => [execution.executionId, execution]));
}

/** The run's execution, when the executor has one the runtime may read. */
export async function executionOf(ctx: RuntimeContext, row: Row): Promise<ExecutionSummary | undefined> {
  return (await executionsOf(ctx, [row])).get(String(row.execution_id));
}

/** Whether the executor has the execution of this id for the runtime to read (else its reported facts are the only ones). */
export async function executorHas(ctx: RuntimeContext, executionId: string): Promise<boolean> {
  return (await ctx.executions.getMany([executionId])).length > 0;
}
