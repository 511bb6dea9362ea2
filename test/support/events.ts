import type { TestKernel } from './harness.ts';

/**
 * Waits until every durable event delivery has settled. Subscribers (the costs plugin keeping
 * monthly policies in step with kernel budgets, for one) act after the writer commits, not
 * inside its transaction, so a test that reads what a subscriber writes, or compares tables
 * before and after other requests, waits for the deliveries first.
 */
export async function eventsSettled(t: Pick<TestKernel, 'sql'>): Promise<void> {
  const until = Date.now() + 20_000;
  for (;;) {
    const { rows } = await t.sql.query("select count(*)::int as n from keel_events.deliveries where state in ('pending', 'leased')");
    if (rows[0].n === 0) return;
    if (Date.now() > until) throw new Error('event deliveries did not settle');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
