import type pg from 'pg';
import type { DatabaseTraffic } from '../protocol/messages.ts';

/**
 * Counts the statements and round trips of a connection while a batch holds it. The count
 * costs a counter increment per statement; `done()` stops counting and answers the figures.
 */
export function countTraffic(client: pg.PoolClient): { done(): DatabaseTraffic } {
  const traffic: DatabaseTraffic = { statements: 0, roundTrips: 0 };
  let inFlight = 0;
  const query = client.query;
  const counted = function (this: pg.PoolClient, ...args: unknown[]) {
    traffic.statements++;
    if (inFlight++ === 0) traffic.roundTrips++;
    const settle = () => { inFlight--; };
    const result = (query as (...a: unknown[]) => unknown).apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === 'function') (result as Promise<unknown>).then(settle, settle);
    else settle();
    return result;
  };
  (client as unknown as { query: unknown }).query = counted;
  return {
    done() {
      // Back to the pool's own method: the next user of the connection is not counted.
      delete (client as unknown as { query?: unknown }).query;
      if (client.query !== query) (client as unknown as { query: unknown }).query = query;
      return { ...traffic };
    },
  };
}
