import { LIVE_STATUSES } from '../../runs/run-ledger.ts';
import type { KernelServices } from '../../services.ts';
import type { ExtensionHost } from '../extension-host.ts';

/**
 * A run opened by a call whose transaction then failed must not stay open (its token live, no
 * row of the plugin naming it): `ctx.runs.open` commits at once, in the kernel's own
 * transaction, before the plugin's transaction has decided. So each opened run is remembered
 * with its call, and when the call fails (an error, a timeout, a crashed worker) the runs it
 * opened and left open are closed `failed` with reason `opening_call_failed`. A Keel process
 * that dies between the two commits is the one case left: its run stays open until it is
 * closed by other means (its token expires with its short lifetime).
 */
const opened = new WeakMap<ExtensionHost, Map<string, Array<{ runId: string; plugin: string }>>>();

export function rememberOpenedRun(host: ExtensionHost, invocationId: string, runId: string, plugin: string): void {
  let byCall = opened.get(host);
  if (!byCall) {
    byCall = new Map();
    opened.set(host, byCall);
    const calls = byCall;
    host.afterInvoke.push(async (id, result) => {
      const runs = calls.get(id);
      if (!runs) return result;
      calls.delete(id);
      if (!result?.ok) await closeLeftOpen(host.kernel, runs).catch((error: Error) => host.kernel.log.error({ err: error, invocationId: id }, 'could not close the runs of a failed call'));
      return result;
    });
  }
  const runs = byCall.get(invocationId) ?? [];
  runs.push({ runId, plugin });
  byCall.set(invocationId, runs);
}

async function closeLeftOpen(kernel: KernelServices, runs: Array<{ runId: string; plugin: string }>): Promise<void> {
  for (const { runId, plugin } of runs) {
    await kernel.db.transaction(async (tx) => {
      const run = await tx.maybeOne<{ company_id: string; agent_id: string; status: string }>('select company_id, agent_id, status from runs where id = ? for update', [runId]);
      if (!run || !LIVE_STATUSES.has(run.status)) return;
      await kernel.runs.close(tx, runId, { status: 'failed', reason: 'opening_call_failed' });
      await kernel.activity.record(tx, {
        companyId: run.company_id, actorType: 'system', actorId: `plugin:${plugin}`, agentId: run.agent_id, runId,
        action: 'run.closed', entityType: 'run', entityId: runId, details: { status: 'failed', reason: 'opening_call_failed', plugin },
      });
    });
  }
}
