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

const entryCount = async (): Promise<number> =>
  (await t.sql.query('select count(*)::int as n from plugin_batch_ledger.entries where company_id = $1', [company.id])).rows[0].n;

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

  it('answers bad headers alone: refused idempotency keys and ignored run ids never fail a neighbour', async () => {
    const path = `/api/plugins/batch-ledger/companies/${company.id}/entries`;
    const headers = (i: number): Record<string, string> => {
      if (i % 20 === 3) return { 'x-service-run-id': i % 40 === 3 ? 'not-a-uuid' : "'; drop table entries; --" };
      if (i % 40 === 5) return { 'idempotency-key': '' };
      if (i % 40 === 25) return { 'idempotency-key': 'k'.repeat(256) };
      return {};
    };
    const before = await entryCount();
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => t.api.post(path, { amount: 1 }, { headers: headers(i) })));
    const refused = responses.filter((_, i) => 'idempotency-key' in headers(i));
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(refused.map(() => [400, 'invalid_idempotency_key']));
    const accepted = responses.filter((_, i) => !('idempotency-key' in headers(i)));
    expect(accepted.map((r) => r.status)).toEqual(accepted.map(() => 201));
    expect(await entryCount()).toBe(before + accepted.length);
    // A run id that is not a uuid is not a run id: the entry is written without one.
    const runIds = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'ledger.entry_added' and run_id is not null", [company.id]);
    expect(runIds.rows[0].n).toBe(0);
  });

  it('fails only the call whose writes the commit refuses, without the database text, and keeps its neighbours', async () => {
    const path = `/api/plugins/batch-ledger/companies/${company.id}/entries`;
    const amounts = Array.from({ length: 120 }, (_, i) => (i % 30 === 11 ? 999_999 : 2));
    const before = await entryCount();
    const responses = await Promise.all(amounts.map((amount) => t.api.post(path, { amount })));
    for (const [index, response] of responses.entries()) {
      if (amounts[index] === 999_999) {
        expect([response.status, response.body.code]).toEqual([500, 'plugin_transaction_failed']);
        expect(response.text).not.toMatch(/entries_amount_check|refused at commit|999999/);
      } else {
        expect(response.status, response.text).toBe(201);
      }
    }
    expect(await entryCount()).toBe(before + amounts.filter((a) => a !== 999_999).length);
    expect((await t.sql.query('select count(*)::int as n from plugin_batch_ledger.entries where amount = 999999')).rows[0].n).toBe(0);
  });

  it('never acknowledges a call whose transaction an error it swallowed has aborted, alone or in a batch', async () => {
    const path = `/api/plugins/batch-ledger/companies/${company.id}/entries`;
    const before = await entryCount();
    for (const route of [path, `${path}-alone`]) {
      const alone = await t.api.post(route, { amount: 999_998 });
      expect([route, alone.status, alone.body.code]).toEqual([route, 500, 'plugin_transaction_failed']);
    }
    const amounts = Array.from({ length: 90 }, (_, i) => (i % 30 === 17 ? 999_998 : 3));
    const responses = await Promise.all(amounts.map((amount) => t.api.post(path, { amount })));
    expect(responses.map((r) => r.status)).toEqual(amounts.map((a) => (a === 999_998 ? 500 : 201)));
    expect(await entryCount()).toBe(before + amounts.filter((a) => a !== 999_998).length);
    expect((await t.sql.query('select count(*)::int as n from plugin_batch_ledger.entries where amount = 999998')).rows[0].n).toBe(0);
  });

  it('sends a lone call without waiting for a batch to form', async () => {
    const started = Date.now();
    const res = await t.api.post(`/api/plugins/batch-ledger/companies/${company.id}/entries`, { amount: 5 });
    expect(res.status).toBe(201);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('refuses batch on read-only routes in the manifest', async () => {
    const { validateManifest } = await import('../../sdk/manifest/validate-manifest.ts');
    expect(() => validateManifest({
      key: 'bad-batch', version: '1.0.0', sdkApiVersion: 1, displayName: 'x', entry: 'src/index.ts',
      capabilities: [{ id: 'http.routes', reason: 'routes' }],
      routes: [{ key: 'r', method: 'GET', path: '/r', auth: 'any', batch: {} }],
    })).toThrow(/batch needs a mutating, transactional route/);
  });
});
