import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * A kernel route whose transaction loses a deadlock (or a serialization failure) did nothing
 * wrong and nothing was committed: it answers 503 `transaction_conflict` with Retry-After, as a
 * plugin's call does for the same class of error, never a 500. The deadlock is real: another
 * session holds the company's agent and then asks for the company row that the archive holds.
 */
describe('a kernel route that loses a deadlock', () => {
  let t: TestKernel;

  beforeAll(async () => { t = await startTestKernel(); });
  afterAll(async () => { await t?.stop(); });

  it('answers 503 transaction_conflict with Retry-After, and changes nothing', async () => {
    const company = await createCompany(t.api, { name: 'Deadlock Works' });
    const agent = await createAgent(t.api, company.id, { name: 'Held' });
    const other = await t.sql.connect();
    try {
      await other.query('begin');
      await other.query('select 1 from agents where id = $1 for update', [agent.id]);
      const archiving = t.api.post(`/api/companies/${company.id}/archive`, {});
      // The archive holds the company row and waits for the agent's: then this session asks for
      // the company row, closing the circle. The archive waited first, so its deadlock check
      // (deadlock_timeout) runs first and it is the one aborted.
      await waitForLockWait(t, 'agents');
      const closing = other.query('select 1 from companies where id = $1 for update', [company.id]);
      const res = await archiving;
      await closing;
      expect(res.status, res.text).toBe(503);
      expect(res.body).toMatchObject({ code: 'transaction_conflict', error: 'The request met a conflicting change and was not applied; retry it' });
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await other.query('rollback').catch(() => undefined);
      other.release();
    }
    expect((await t.api.get(`/api/companies/${company.id}`)).body.status).toBe('active');
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.status).not.toBe('paused');
    // Retried, it goes through.
    expect((await t.api.post(`/api/companies/${company.id}/archive`, {})).status).toBe(200);
  });
});

/** Resolves once a session of the kernel waits for a row lock while updating `table`. */
async function waitForLockWait(t: TestKernel, table: string): Promise<void> {
  for (;;) {
    const { rows } = await t.sql.query(
      "select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query ilike $1 and pid <> pg_backend_pid()", [`%${table}%`]);
    if (rows.length) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
