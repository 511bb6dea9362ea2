import type pg from 'pg';
import { flushBatchActivity } from '../capabilities/activity-write/worker.ts';
import { writePendingEvents } from '../capabilities/events-publish/events-at-commit.ts';
import type { Invocation } from './invocation.ts';

/** What a transaction holds back to send with its COMMIT (a call's own, or a batch's for all its calls). */
export interface HeldForCommit {
  /** A call's buffered events (events-at-commit.ts); a batch's calls write theirs at once. */
  events?: Invocation;
  /** Activity entries (activity.ts). */
  activity: unknown[][];
}

/**
 * The one place that decides what a transaction sends with its COMMIT, and in which order, all
 * in the COMMIT's round trip (the connection pipelines; PluginDatabase.closeTransaction): the
 * buffered events (each takes its entity's order lock), then the activity entries, whose
 * per-company chain lock is taken last, as every kernel route takes it.
 * Undefined when nothing is held.
 */
export function withCommit(held: HeldForCommit): ((client: pg.PoolClient) => Promise<void>) | undefined {
  if (!held.events?.pendingEvents.length && held.activity.length === 0) return undefined;
  return async (client) => {
    await Promise.all([held.events ? writePendingEvents(client, held.events) : undefined, flushBatchActivity(client, held.activity)]);
  };
}
