import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * Text no column can hold is refused where the request is read, for kernel and plugin routes
 * alike: a lone UTF-16 surrogate anywhere in a JSON body (PostgreSQL refuses it in jsonb, and
 * text would silently store U+FFFD instead) and a NUL in a query string. The answer is 400
 * `validation_failed` naming the field, and nothing is written.
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;
let companyId: string;
let agentId: string;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, ECHO);
  companyId = (await createCompany(t.api)).id;
  agentId = (await createAgent(t.api, companyId)).id;
});
afterAll(async () => { await t?.stop(); });

const rows = async () => (await t.sql.query(
  'select (select count(*) from companies)::int as companies, (select count(*) from activity_log)::int as activity, (select count(*) from plugin_costs.cost_events)::int as events, (select count(*) from plugin_echo.notes)::int as notes')).rows[0];

/** Sends a JSON text as it is: JSON.stringify would escape a lone surrogate the same way, but this keeps the case visible. */
const postRaw = (path: string, json: string) => t.api.request('POST', path, { rawBody: json, headers: { 'content-type': 'application/json' } });

describe('lone surrogates in JSON bodies', () => {
  const costEvent = (provider: string) => `{"agentId":"${agentId}","provider":"${provider}","model":"m","costCents":1,"occurredAt":"${new Date().toISOString()}"}`;
  const cases = (): Array<[string, string, string, string]> => [
    ['a kernel field, high surrogate', '/api/companies', '{"name":"Acme \\ud800"}', 'name'],
    ['a kernel field, low surrogate', '/api/companies', '{"name":"\\udc00 Acme"}', 'name'],
    ['a kernel nested value', `/api/companies/${companyId}/agents`, '{"name":"x","metadata":{"note":["ok","\\ud83d"]}}', 'metadata.note.1'],
    ['a kernel nested key', `/api/companies/${companyId}/agents`, '{"name":"x","metadata":{"\\udfff":1}}', 'metadata.\ufffd'],
    ['a plugin field (batched route)', `/api/companies/${companyId}/cost-events`, costEvent('\\ud800'), 'provider'],
    ['a plugin field', `/api/plugins/echo/companies/${companyId}/notes`, '{"text":"a\\ud800b"}', 'text'],
  ];
  for (const [label, , , ] of cases()) {
    it(`refuses one in ${label} with 400 validation_failed naming the field`, async () => {
      const [, path, json, field] = cases().find(([l]) => l === label)!;
      const before = await rows();
      const res = await postRaw(path, json);
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: field, keyword: 'surrogate' }] });
      expect(res.body.error).toContain(field);
      expect(await rows()).toEqual(before);
    });
  }

  it('accepts surrogate pairs (emoji) in kernel and plugin fields', async () => {
    const company = await postRaw('/api/companies', '{"name":"Smile \\ud83d\\ude00"}');
    expect(company.status, company.text).toBe(201);
    expect(company.body.name).toBe('Smile 😀');
    const note = await postRaw(`/api/plugins/echo/companies/${companyId}/notes`, '{"text":"😀 \\ud83d\\ude01"}');
    expect(note.status, note.text).toBe(201);
    expect(note.body.text).toBe('😀 😁');
  });
});

describe('NUL characters in query strings of plugin routes', () => {
  it('refuses them with 400 validation_failed naming the parameter, as kernel routes do', async () => {
    for (const path of ['/api/plugins/echo/whoami?q=a%00b', `/api/companies/${companyId}/costs/quota-windows?x=%00`, `/api/companies/${companyId}/costs/summary?from=%00`]) {
      const res = await t.api.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body, path).toMatchObject({ code: 'validation_failed', issues: [{ keyword: 'nul' }] });
    }
    const post = await t.api.post('/api/plugins/echo/echo?q=a%00b', { x: 1 });
    expect([post.status, post.body.code]).toEqual([400, 'validation_failed']);
  });
});
