import { LIVE_STATUSES } from '../../../runs/run-ledger.ts';
import type { Tx } from '../../../db/database.ts';
import type { KernelServices } from '../../../services.ts';
import type { BrokeredCall } from '../types.ts';

/**
 * A run opened by a call whose transaction then failed must not stay open (its token live, no
 * row of the plugin naming it): `ctx.runs.open` commits at once, in the kernel's own
 * transaction, before the plugin's transaction has decided. Two mechanisms close such runs:
 *
 * - In the process that served the call, each opened run is remembered with its call, and when
 *   the call fails (an error, a timeout, a crashed worker) the runs it opened and left open are
 *   closed `failed` with reason `opening_call_failed` at once.
 * - Durably, for a Keel process that dies between the two commits: the run is opened
 *   unconfirmed (`confirm_by`, the moment the call's signed identity expires), the worker
 *   confirms the runs its call opened inside the plugin's transaction just before COMMIT
 *   (`keel_bridge.confirm_opened_runs`, bridge.sql beside this file), and `UnconfirmedRunSweep` in any
 *   process closes the live runs still unconfirmed after `confirm_by` the same way.
 */
const opened = new WeakMap<object, Map<string, Array<{ runId: string; plugin: string }>>>();

export function rememberOpenedRun(call: BrokeredCall<'db' | 'runs' | 'activity' | 'log', 'afterInvoke'>, runId: string): void {
  const { host, kernel, plugin } = call;
  const invocationId = call.info.id;
  let byCall = opened.get(host);
  if (!byCall) {
    byCall = new Map();
    opened.set(host, byCall);
    const calls = byCall;
    host.afterInvoke.push(async (id, result) => {
      const runs = calls.get(id);
      if (!runs) return result;
      calls.delete(id);
      if (!result?.ok) await closeLeftOpen(kernel, runs).catch((error: Error) => kernel.log.error({ err: error, invocationId: id }, 'could not close the runs of a failed call'));
      return result;
    });
  }
  const runs = byCall.get(invocationId) ?? [];
  runs.push({ runId, plugin });
  byCall.set(invocationId, runs);
}

/**
 * What `runs.open` stores for the worker to confirm: the call, and when an unconfirmed run is
 * orphaned (its call's signed identity expired, so its transaction can no longer confirm it,
 * plus a margin). A call that carries no signed identity (read-only) can never confirm: its
 * runs are due at its deadline's end as well.
 */
export function confirmationOf(call: BrokeredCall<never, 'invocations'>): { call: string; by: Date } {
  const signedUntil = call.host.invocations.get(call.info.id)?.signedUntil ?? Math.floor(Date.now() / 1000) + 60;
  return { call: call.info.id, by: new Date((signedUntil + CONFIRM_MARGIN_SECONDS) * 1000) };
}

const CONFIRM_MARGIN_SECONDS = 5;
const SWEEP_MS = 30_000;
const SWEEP_BATCH = 100;

/**
 * Closes live runs that their opening call never confirmed once they are due (every 30 s, in
 * every process; each run is taken by one process: FOR UPDATE SKIP LOCKED, and a run whose
 * confirmation is being committed is locked by that transaction and skipped).
 */
export class UnconfirmedRunSweep {
  private readonly kernel: KernelServices;
  private timer: NodeJS.Timeout | null = null;

  constructor(kernel: KernelServices) {
    this.kernel = kernel;
  }

  start(): void {
    const next = () => {
      this.timer = setTimeout(() => {
        this.sweep().catch((error: Error) => this.kernel.log.warn({ err: error }, 'could not close unconfirmed runs')).finally(() => { if (this.timer) next(); });
      }, SWEEP_MS);
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One pass; answers the runs it closed. */
  async sweep(): Promise<string[]> {
    const closed: string[] = [];
    for (;;) {
      const batch = await this.kernel.db.transaction(async (tx) => {
        const due = await tx.query<{ id: string; company_id: string; agent_id: string; opened_by_plugin: string | null }>(
          `select id, company_id, agent_id, opened_by_plugin from runs
            where confirm_by is not null and confirm_by < now() and status in ('queued', 'running')
            order by confirm_by limit ? for update skip locked`, [SWEEP_BATCH]);
        for (const run of due) await closeRun(this.kernel, tx, run.id, run.opened_by_plugin ?? 'unknown', { companyId: run.company_id, agentId: run.agent_id });
        return due.map((run) => run.id);
      });
      closed.push(...batch);
      if (batch.length < SWEEP_BATCH) return closed;
    }
  }
}

async function closeLeftOpen(kernel: Pick<KernelServices, 'db' | 'runs' | 'activity'>, runs: Array<{ runId: string; plugin: string }>): Promise<void> {
  for (const { runId, plugin } of runs) {
    await kernel.db.transaction(async (tx) => {
      const run = await tx.maybeOne<{ company_id: string; agent_id: string; status: string }>('select company_id, agent_id, status from runs where id = ? for update', [runId]);
      if (!run || !LIVE_STATUSES.has(run.status)) return;
      await closeRun(kernel, tx, runId, plugin, { companyId: run.company_id, agentId: run.agent_id });
    });
  }
}

async function closeRun(kernel: Pick<KernelServices, 'runs' | 'activity'>, tx: Tx, runId: string, plugin: string, run: { companyId: string; agentId: string }): Promise<void> {
  await tx.exec('update runs set confirm_by = null where id = ?', [runId]);
  await kernel.runs.close(tx, runId, { status: 'failed', reason: 'opening_call_failed' });
  await kernel.activity.record(tx, {
    companyId: run.companyId, actorType: 'system', actorId: `plugin:${plugin}`, agentId: run.agentId, runId,
    action: 'run.closed', entityType: 'run', entityId: runId, details: { status: 'failed', reason: 'opening_call_failed', plugin },
  });
}
