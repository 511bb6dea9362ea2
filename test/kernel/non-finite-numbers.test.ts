import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';

/**
 * `1e309` is valid JSON that JSON.parse reads as Infinity: every JSON body, a kernel route's or
 * a plugin route's, refuses it with 400 validation_failed before anything runs. Integers that
 * are finite but beyond what a column holds are refused by the route's schema.
 */
const ECHO = fileURLToPath(new URL('../host/fixtures/echo', import.meta.url));
let t: TestKernel;
let companyId: string;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = (await t.api.post('/api/companies', { name: 'Numbers Co' })).body.id;
  // The echo fixture, with a number in the query of its whoami route.
  await installAndEnable(t, await pluginVariant(ECHO, (manifest) => {
    manifest.routes.find((route: { key: string }) => route.key === 'whoami').query = { type: 'object', properties: { n: { type: 'number' } } };
  }));
});
afterAll(async () => { await t?.stop(); });

const json = (text: string) => ({ rawBody: text, headers: { 'content-type': 'application/json' } });

async function uploadLimitRows(): Promise<number> {
  return (await t.sql.query<{ n: number }>('select count(*)::int as n from company_upload_limits')).rows[0]!.n;
}

describe('numbers a JSON body cannot hold', () => {
  it('PUT upload-limit refuses 1e309, -1e309, 1e308 and a limit over 1 TiB with 400 and stores nothing', async () => {
    const path = `/api/companies/${companyId}/upload-limit`;
    for (const [text, code, mentions] of [
      ['{"maxBytes": 1e309}', 'validation_failed', 'maxBytes must be a finite number'],
      ['{"maxBytes": -1e309}', 'validation_failed', 'maxBytes must be a finite number'],
      ['{"maxBytes": 1e308}', 'validation_failed', 'maxBytes must be <= 1099511627776'],
      [`{"maxBytes": ${2 ** 40 + 1}}`, 'validation_failed', 'maxBytes must be <= 1099511627776'],
    ] as const) {
      const res = await t.api.request('PUT', path, json(text));
      expect(res.status, `${text}: ${res.text}`).toBe(400);
      expect(res.body).toMatchObject({ code, error: expect.stringContaining(mentions) });
      expect(res.body.issues[0].path).toBe('maxBytes');
    }
    expect(await uploadLimitRows()).toBe(0);
    const largest = await t.api.put(path, { maxBytes: 2 ** 40 });
    expect(largest.status, largest.text).toBe(200);
    expect(largest.body.maxBytes).toBe(2 ** 40);
  });

  it('anywhere in a body, at any depth, before the route reads it', async () => {
    const res = await t.api.request('PATCH', `/api/companies/${companyId}`, json('{"description": "d", "x": [{"y": 1e400}]}'));
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'x.0.y', keyword: 'infinite' }] });
  });

  it('in the body of a plugin route, which never reaches the worker as null', async () => {
    const before = (await t.sql.query<{ n: number }>('select count(*)::int as n from activity_log')).rows[0]!.n;
    for (const text of ['{"n": 1e309}', '{"a": {"b": [-1e309]}}', '1e309']) {
      const res = await t.api.request('POST', '/api/plugins/echo/echo', json(text));
      expect(res.status, `${text}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await t.sql.query<{ n: number }>('select count(*)::int as n from activity_log')).rows[0]!.n).toBe(before);
    const fine = await t.api.request('POST', '/api/plugins/echo/echo', json('{"n": 1e308}'));
    expect(fine.status, fine.text).toBe(200);
    expect(fine.body.body).toEqual({ n: 1e308 });
  });

  it('in a query string a number schema coerces, on kernel and plugin routes', async () => {
    for (const path of ['/api/plugins/echo/whoami?n=1e309', '/api/plugins/echo/whoami?n=-1e309', `/api/companies/${companyId}/approvals?limit=1e309`]) {
      const res = await t.api.get(path);
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await t.api.get('/api/plugins/echo/whoami?n=1e308')).status).toBe(200);
  });
});
