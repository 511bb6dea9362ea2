import type { SlotReport, WireError } from '../protocol/messages.ts';
import { writeActivity } from '../capabilities/activity-write/worker.ts';
import type { PluginDatabase } from './capabilities/database.ts';
import { confirmOpenedRuns } from '../capabilities/runs-open/opened-runs.ts';
import type { DeliveredSecrets } from './delivered-secrets.ts';
import type { Invocation } from './invocation.ts';
import type { TRANSACTION_FAILURES } from './plugin-wire-error.ts';
import { readResult, wiredAnswer } from './wired-answer.ts';
import { withCommit } from './with-commit.ts';

/** What finishing a call needs of its plugin (hosted-plugin.ts). */
export interface FinishingPlugin {
  readonly pluginKey: string;
  readonly maxResponseBytes: number;
  readonly delivered: DeliveredSecrets;
  readonly invocations: Map<string, Invocation>;
  database(): PluginDatabase | null;
  send(report: SlotReport): void;
  wireFromPlugin(raw: unknown, target: string): WireError;
  transactionFailed(stage: keyof typeof TRANSACTION_FAILURES, target: string, error: unknown): WireError;
}

/**
 * The end of a call that is not part of a batch: its answer checked (size, statements still
 * running), the host's default activity entry, the runs it opened confirmed, then its
 * transaction committed with what waits for the COMMIT (events, activity) or rolled back, and
 * the result reported once. A call inside a batch hands all of that to the batch, which owns
 * the transaction (batches.ts).
 */
/** Commits or rolls back the invocation's transaction, then reports the result once. */
export async function finishCall(plugin: FinishingPlugin, invocation: Invocation, resultJson: string): Promise<void> {
  clearTimeout(invocation.timer);
  const database = plugin.database();
  const parsed = readResult(resultJson);
  let ok = parsed.ok;
  let error = ok ? undefined : plugin.wireFromPlugin(parsed.e, invocation.message.target);
  // The value's text goes on as it is unless delivered secrets must first be taken out of it.
  let answer = ok ? wiredAnswer(invocation.message.kind, plugin.delivered.value(parsed.v ?? null), plugin.delivered.active ? undefined : parsed.text) : undefined;
  if (ok && answer && answer.bytes > plugin.maxResponseBytes) {
    ok = false;
    error = { status: 502, code: 'plugin_response_too_large', message: `Plugin response exceeds ${plugin.maxResponseBytes} bytes` };
    answer = undefined;
  }
  if (await cancelStatements(database, invocation) && ok) {
    ok = false;
    error = { status: 500, code: 'plugin_transaction_failed', message: `${plugin.pluginKey} answered while a statement of its transaction was still running; the statement was cancelled and the transaction rolled back` };
    answer = undefined;
  }
  invocation.settling = true;
  if (ok && invocation.wantsTransaction && !invocation.message.readOnly && invocation.message.defaultActivity && !invocation.activityWritten && database) {
    // The host's own entry joins the call's transaction (opening it if the handler never did).
    try {
      if (await defaultActivityDue(invocation)) await writeActivity(database, invocation, invocation.message.defaultActivity);
    } catch (activityError) {
      ok = false;
      error = plugin.transactionFailed('activity', invocation.message.target, activityError);
      answer = undefined;
    }
  }
  if (ok && invocation.openedRuns && database) {
    try {
      await confirmOpenedRuns(database, invocation);
    } catch (confirmError) {
      ok = false;
      error = plugin.transactionFailed('commit', invocation.message.target, confirmError);
      answer = undefined;
    }
  }
  if (invocation.batchLead) {
    // The batch handler's answers go to the batch, which owns the transaction.
    plugin.invocations.delete(invocation.id);
    invocation.batchLead.resolve({ ok, value: answer?.value, error });
    return;
  }
  if (invocation.batch) {
    // The batch owns the transaction: it rolls this item back to its savepoint or keeps it.
    plugin.invocations.delete(invocation.id);
    invocation.batch.resolve({ ok, value: answer?.value, envelope: answer?.envelope, error, activityWritten: invocation.activityWritten, ...kernelRows(invocation), activity: ok ? invocation.pendingActivity : [] });
    return;
  }
  const client = await invocation.openedClient();
  if (client && database) {
    invocation.client = null;
    const failure = await database.closeTransaction(client, ok ? 'COMMIT' : 'ROLLBACK', withCommit({ events: invocation, activity: invocation.pendingActivity }));
    if (failure && ok) {
      ok = false;
      error = plugin.transactionFailed('commit', invocation.message.target, failure);
      answer = undefined;
    }
  } else if (ok && !invocation.wantsTransaction && invocation.message.defaultActivity && !invocation.activityWritten && database && invocation.message.signed) {
    await writeActivity(database, invocation, invocation.message.defaultActivity).catch(() => undefined);
  }
  plugin.invocations.delete(invocation.id);
  // Status changes are reported only when the transaction that made them committed.
  plugin.send({ t: 'result', id: invocation.id, ok, value: answer?.value, envelope: answer?.envelope, error, activityWritten: invocation.activityWritten, ...(ok ? kernelRows(invocation) : {}) });
}

/** The result's `kernelRowsWritten`, present only when the call wrote kernel rows. */
export function kernelRows(written: { kernelRowsWritten: boolean }): { kernelRowsWritten?: true } {
  return written.kernelRowsWritten ? { kernelRowsWritten: true } : {};
}


/** Whether the host's entry is due: always, or (`onlyIfWritten`) when the call's transaction wrote something. */
async function defaultActivityDue(invocation: Invocation): Promise<boolean> {
  if (!invocation.message.defaultActivity?.onlyIfWritten) return true;
  const client = await invocation.openedClient();
  if (!client) return false;
  // A transaction is given an id on its first write, and only then.
  const { rows } = await client.query<{ wrote: boolean }>('select pg_current_xact_id_if_assigned() is not null as wrote');
  return rows[0]!.wrote;
}


/**
 * Statements a call still has running when it ends (it answered with one in flight, failed,
 * or overran its deadline) are cancelled in PostgreSQL, not left to statement_timeout: they
 * would hold locks and a connection for up to 30 s, and outlive a plugin restarted for the
 * overrun. Answers whether one was running in the call's transaction, which then cannot commit.
 */
export async function cancelStatements(db: PluginDatabase | null, invocation: Invocation): Promise<boolean> {
  if (!db) return false;
  await Promise.all([...invocation.pooledClients].map((client) => db.cancel(client, true)));
  const client = await invocation.openedClient();
  return client ? db.cancel(client) : false;
}

