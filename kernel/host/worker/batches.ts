import type pg from 'pg';
import type { CallResult, InvokeMessage, SlotReport, WireError } from '../protocol/messages.ts';
import type { PluginDatabase } from './capabilities/database.ts';
import { READ_WRITE } from './read-write.ts';
import { Invocation } from './invocation.ts';
import type { WiredAnswer } from './wired-answer.ts';
import { countTraffic } from './round-trips.ts';
import { withCommit } from './with-commit.ts';
import { kernelRows } from './call-finish.ts';

/** What the batch runner needs of the worker (worker-main.ts). */
export interface BatchHost {
  database(): PluginDatabase | null;
  invocations: Map<string, Invocation>;
  /** Runs one invocation in the isolate (its outcome goes to `invocation.batch` or `batchLead`). */
  start(invocation: Invocation): void;
  send(message: SlotReport): void;
  log(level: 'warn', message: string): void;
  /** A plugin's own error, bounded and rid of delivered secrets and of PostgreSQL's text. */
  wireFromPlugin(raw: unknown, target: string): WireError;
  /** A transaction that could not be opened, written or committed: a fixed message (PostgreSQL's text goes to the plugin's log). */
  transactionFailed(stage: 'open' | 'activity' | 'commit', target: string, error: unknown): WireError;
  /** A plugin's answer as it goes to the kernel (wired-answer.ts), rid of delivered secrets. */
  answer(kind: InvokeMessage['kind'], value: unknown): WiredAnswer;
}

/**
 * Group commit. A plugin with a batch handler for the route answers every call of the batch
 * in one set-based pass; otherwise (or when that handler fails) the calls run one after
 * another, each inside its own savepoint. Either way all are answered after a single COMMIT,
 * so nothing is acknowledged before it is durable.
 */
export function batchRunner(host: BatchHost): (items: InvokeMessage[]) => Promise<void> {
  /** Routes whose plugin has no batch handler: their batches go item by item at once. */
  const withoutBatchHandler = new Set<string>();
  return async (items) => {
    const database = host.database();
    if (!database) {
      for (const item of items) host.start(new Invocation(item));
      return;
    }
    if (!withoutBatchHandler.has(items[0]!.target) && await invokeBatchHandler(host, items, database, withoutBatchHandler)) return;
    await invokeItemByItem(host, items, database);
  };
}

/** The `kernelRowsWritten` of every call of a batch: they share one COMMIT, so one call's write is waited for by all. */
const sharedKernelRows = (written: ReadonlyArray<boolean | undefined>) => kernelRows({ kernelRowsWritten: written.some(Boolean) });

/** Errors after which running the calls again one by one would only fail the same way (or worse). */
const FINAL_BATCH_ERRORS = new Set(['plugin_timeout', 'plugin_out_of_memory']);

/**
 * Runs the plugin's batch handler over all calls in one transaction. Answers false, having
 * rolled back and answered nothing, when the calls should run one by one instead: the plugin
 * has no batch handler, the handler threw, or the shared commit failed (a deadlock, say).
 */
async function invokeBatchHandler(host: BatchHost, items: InvokeMessage[], db: PluginDatabase, withoutBatchHandler: Set<string>): Promise<boolean> {
  const first = items[0]!;
  let client: pg.PoolClient;
  try {
    client = await db.connectForBatch();
  } catch {
    return false;
  }
  const traffic = countTraffic(client);
  // Not awaited: the BEGIN goes out with the handler's first statement (the connection pipelines).
  // Had it failed, that statement fails too, and the batch runs again call by call.
  client.query(READ_WRITE).catch(() => undefined);
  const leadId = `${first.id}:batch`;
  const members = items.map((item) => {
    const member = new Invocation(item);
    member.client = client;
    member.leadId = leadId;
    member.batch = { resolve: () => undefined };
    host.invocations.set(item.id, member);
    return member;
  });
  const input = `{"calls":[${items.map((item) => `{"info":${JSON.stringify(item.info)},"input":${item.input}}`).join(',')}]}`;
  const lead = new Invocation({ ...first, id: leadId, kind: 'route_batch', input, info: { ...first.info, id: leadId, kind: 'route_batch' }, defaultActivity: null });
  lead.client = client;
  const outcome = await new Promise<{ ok: boolean; value?: string; error?: WireError }>((resolve) => {
    lead.batchLead = { resolve };
    host.start(lead);
  });
  for (const member of members) { member.finished = true; host.invocations.delete(member.id); }
  const giveUp = async (): Promise<false> => {
    traffic.done();
    await db.closeTransaction(client, 'ROLLBACK');
    return false;
  };
  if (!outcome.ok) {
    const error = outcome.error!;
    if (error.code === 'handler_missing') { withoutBatchHandler.add(first.target); return giveUp(); }
    if (FINAL_BATCH_ERRORS.has(error.code)) {
      await giveUp();
      for (const item of items) host.send({ t: 'result', id: item.id, ok: false, error, activityWritten: false });
      return true;
    }
    host.log('warn', `batch handler ${first.target} failed (${error.code}: ${error.message.slice(0, 200)}); running its ${items.length} calls one by one`);
    return giveUp();
  }
  const answers = JSON.parse(outcome.value ?? '[]') as Array<{ ok: boolean; v?: unknown; e?: unknown }>;
  const wrote = sharedKernelRows([lead, ...members].map((call) => call.kernelRowsWritten));
  const results: CallResult[] = [];
  const activity: unknown[][] = [];
  items.forEach((item, index) => {
    const answer = answers[index];
    const member = members[index]!;
    if (!answer?.ok) {
      results.push({ id: item.id, ok: false, error: host.wireFromPlugin(answer?.e, item.target), activityWritten: false });
      return;
    }
    activity.push(...member.pendingActivity);
    if (!member.activityWritten && item.defaultActivity && item.signed) {
      const entry = item.defaultActivity;
      activity.push([item.signed.invocation, item.signed.signature, entry.action, entry.entityType, entry.entityId, null]);
    }
    const { value, envelope } = host.answer(item.kind, answer.v ?? null);
    results.push({ id: item.id, ok: true, value, envelope, activityWritten: true, ...wrote });
  });
  const failure = await db.closeTransaction(client, 'COMMIT', withCommit({ activity }));
  const database = traffic.done();
  if (failure) {
    host.log('warn', `batch ${first.target} could not commit (${String((failure as Error)?.message ?? failure).slice(0, 200)}); running its ${items.length} calls one by one`);
    return false;
  }
  host.send({ t: 'results', results, database });
  return true;
}

/**
 * Runs the calls of a batch one after another in one transaction, each inside its own
 * savepoint, and answers them all after the one COMMIT. A call that fails is rolled back to its
 * savepoint alone. What only the end of the transaction can refuse (an activity entry when the
 * batch's entries are written, a deferred constraint at COMMIT) cannot be pinned on one call:
 * then each call runs again in a transaction of its own, so that only the call at fault fails.
 */
async function invokeItemByItem(host: BatchHost, items: InvokeMessage[], database: PluginDatabase): Promise<void> {
  const fail = (error: WireError) => { for (const item of items) host.send({ t: 'result', id: item.id, ok: false, error, activityWritten: false }); };
  let client: pg.PoolClient;
  try {
    client = await database.connectForBatch();
    await client.query(READ_WRITE);
  } catch (error) {
    fail(host.transactionFailed('open', items[0]!.target, error));
    return;
  }
  const outcomes: CallResult[] = [];
  const activity: unknown[][] = [];
  let failure: unknown = null;
  try {
    for (const item of items) {
      await client.query('SAVEPOINT keel_item');
      const { activity: entries, ...outcome } = await new Promise<Omit<CallResult, 'id'> & { activity: unknown[][] }>((resolve) => {
        const invocation = new Invocation(item);
        invocation.client = client;
        invocation.batch = { resolve };
        host.start(invocation);
      });
      await client.query(outcome.ok ? 'RELEASE SAVEPOINT keel_item' : 'ROLLBACK TO SAVEPOINT keel_item');
      outcomes.push({ id: item.id, ...outcome });
      activity.push(...entries);
    }
  } catch (error) {
    failure = error;
  }
  failure = failure === null
    ? await database.closeTransaction(client, 'COMMIT', withCommit({ activity }))
    : (await database.closeTransaction(client, 'ROLLBACK'), failure);
  if (failure) {
    if (items.length === 1) {
      fail(host.transactionFailed('commit', items[0]!.target, failure));
      return;
    }
    host.log('warn', `batch ${items[0]!.target} could not commit (${String((failure as Error)?.message ?? failure).slice(0, 200)}); running its ${items.length} calls one at a time`);
    for (const item of items) await invokeItemByItem(host, [item], database);
    return;
  }
  const wrote = sharedKernelRows(outcomes.map((outcome) => outcome.kernelRowsWritten));
  host.send({ t: 'results', results: outcomes.map((outcome) => (outcome.ok ? { ...outcome, ...wrote } : outcome)) });
}
