import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { createApi, startPeerKernel, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * Typed services: the host checks a service's input against its inputSchema before the
 * provider runs and its result against its outputSchema before the caller sees it; the
 * provider sees who calls; and a service that committed in the provider's transaction runs
 * once per idempotency key, even when the caller's own transaction rolled back after it.
 */
const PROVIDER = fileURLToPath(new URL('./fixtures/svc-ledger-provider', import.meta.url));
const CONSUMER = fileURLToPath(new URL('./fixtures/svc-ledger-consumer', import.meta.url));
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, PROVIDER);
  await installAndEnable(t, CONSUMER);
});
afterAll(async () => { await t?.stop(); });

const entries = async () => (await t.sql.query('select text from plugin_svcledger.entries where company_id = $1 order by id', [company.id])).rows.map((r) => r.text);
const append = (body: unknown, key?: string, api = t.api) => api.post(`/api/plugins/svc-ledger-consumer/companies/${company.id}/entries`, body, key ? { headers: { 'idempotency-key': key } } : {});

describe('typed services', () => {
  it('refuse an input that breaks the service inputSchema before the provider runs', async () => {
    const res = await append({ text: 'x'.repeat(51) });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed', error: 'Invalid input of svc-ledger-provider.append: text must NOT have more than 50 characters' });
    const missing = await append({});
    expect(missing.body.error).toBe('Invalid input of svc-ledger-provider.append: text is required');
    expect(await entries()).toEqual([]);
  });

  it('tell the provider who calls, and check the result against the outputSchema', async () => {
    const res = await append({ text: 'first' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({ id: expect.any(Number), text: 'first', caller: 'svc-ledger-consumer', idempotencyKey: null });
    const broken = await t.api.post(`/api/plugins/svc-ledger-consumer/companies/${company.id}/broken`, {});
    expect(broken.status).toBe(502);
    expect(broken.body).toMatchObject({ code: 'service_output_invalid', error: expect.stringMatching(/^Invalid output of svc-ledger-provider\.broken: id must be integer; the provider broke its declared outputSchema$/) });
  });

  it('run a keyed service once when the caller failed after it and is retried', async () => {
    const failed = await append({ text: 'once', fail: true }, 'retry-1');
    expect(failed.status).toBe(422);
    // The provider committed in its own transaction: the entry exists although the caller failed.
    expect((await entries()).filter((text) => text === 'once')).toHaveLength(1);
    const retried = await append({ text: 'once' }, 'retry-1');
    expect(retried.status, retried.text).toBe(201);
    expect(retried.body.idempotencyKey).toBe('append:retry-1');
    expect((await entries()).filter((text) => text === 'once')).toHaveLength(1);
    const again = await append({ text: 'once' }, 'retry-1');
    expect(again.body).toEqual(retried.body);
    const reused = await append({ text: 'other' }, 'retry-1');
    expect(reused.status).toBe(409);
    expect(reused.body.code).toBe('idempotency_key_reused');
  });

  it('run a keyed service once under concurrent retries', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => append({ text: 'burst' }, 'burst-1')));
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    for (const refused of answers.filter((a) => a.status === 409)) expect(refused.body.code).toBe('service_call_in_progress');
    expect((await entries()).filter((text) => text === 'burst')).toHaveLength(1);
    // Once the first run is done, every retry gets its result.
    const after = await append({ text: 'burst' }, 'burst-1');
    expect(after.status).toBe(201);
    expect(new Set(answers.filter((a) => a.status === 201).map((a) => a.body.id).concat(after.body.id)).size).toBe(1);
  });

  it('keep no claim for a call refused before the provider ran, or whose run failed', async () => {
    expect((await append({ text: '' }, 'bad-then-good')).status).toBe(400);
    const good = await append({ text: 'good' }, 'bad-then-good');
    expect(good.status, good.text).toBe(201);
    // The provider's own error reaches the caller; its claim is released, so a retry runs again
    // (and fails the same way) instead of waiting on a run that is over.
    for (let attempt = 0; attempt < 2; attempt++) {
      const exploded = await append({ text: 'explode' }, 'explodes');
      expect(exploded.status).toBe(422);
      expect(exploded.body).toMatchObject({ code: 'exploded', error: 'The ledger refused this entry' });
    }
  });

  it('run a keyed service once when retries arrive at two Keel processes', async () => {
    const peer = await startPeerKernel(t);
    try {
      await expect.poll(async () => (await createApi(peer.url).get('/api/plugins/svc-ledger-consumer/health')).body.worker?.status, { timeout: 15_000 }).toBe('running');
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => append({ text: 'two-processes' }, 'peer-1', i % 2 ? peer.api : t.api)));
      expect(answers.every((a) => a.status === 201 || (a.status === 409 && a.body.code === 'service_call_in_progress'))).toBe(true);
      expect((await entries()).filter((text) => text === 'two-processes')).toHaveLength(1);
      const settled = await append({ text: 'two-processes' }, 'peer-1', peer.api);
      expect(settled.status).toBe(201);
    } finally {
      await peer.stop();
    }
  });
});
