import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/batch-ledger', import.meta.url));
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, FIXTURE);
});
afterAll(async () => { await t?.stop(); });

describe('batched routes (group commit)', () => {
  it('answers every call after a shared commit, keeps each good call and rolls back each failing one alone', async () => {
    const amounts = Array.from({ length: 200 }, (_, i) => (i % 25 === 7 ? -1 : i + 1));
    const responses = await Promise.all(amounts.map((amount) => t.api.post(`/api/plugins/batch-ledger/companies/${company.id}/entries`, { amount })));
    const accepted = amounts.filter((a) => a >= 0);
    for (const [index, response] of responses.entries()) {
      if (amounts[index]! < 0) {
        expect(response.status).toBe(422);
        expect(response.body.code).toBe('negative_amount');
      } else {
        expect(response.status, response.text).toBe(201);
        expect(response.body).toEqual({ amount: amounts[index] });
      }
    }
    const totals = await t.api.get(`/api/plugins/batch-ledger/companies/${company.id}/totals`);
    expect(totals.body.total).toBe(accepted.reduce((a, b) => a + b, 0));
    expect(totals.body.entries).toBe(accepted.length);
    // Concurrent calls shared commits: fewer (top-level) transactions than calls.
    expect(totals.body.transactions).toBeLessThan(accepted.length);
    const activity = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'ledger.entry_added'", [company.id]);
    expect(activity.rows[0].n).toBe(accepted.length);
    const refused = await t.sql.query('select count(*)::int as n from plugin_batch_ledger.entries where amount < 0');
    expect(refused.rows[0].n).toBe(0);
  });

  it('sends a lone call without waiting for a batch to form', async () => {
    const started = Date.now();
    const res = await t.api.post(`/api/plugins/batch-ledger/companies/${company.id}/entries`, { amount: 5 });
    expect(res.status).toBe(201);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('refuses batch on read-only routes in the manifest', async () => {
    const { validateManifest } = await import('../../kernel/host/manifest/validate-manifest.ts');
    expect(() => validateManifest({
      key: 'bad-batch', version: '1.0.0', sdkApiVersion: 1, displayName: 'x', entry: 'src/index.ts',
      capabilities: [{ id: 'http.routes', reason: 'routes' }],
      routes: [{ key: 'r', method: 'GET', path: '/r', auth: 'any', batch: {} }],
    })).toThrow(/batch needs a mutating, transactional route/);
  });
});
