import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * A path segment that cannot be decoded (malformed percent-encoding, overlong UTF-8, an
 * encoded lone surrogate) or that decodes to a NUL names nothing, on kernel and plugin routes
 * alike: 404 with the JSON error body, never a 500 and never a query with the raw text.
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

const SEGMENTS: Array<[string, string]> = [
  ['a malformed escape', '%ZZ'],
  ['a truncated escape', '%E0%A4%A'],
  ['overlong UTF-8', '%C0%AF'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['an encoded NUL', 'a%00b'],
  ['an encoded NUL alone', '%00'],
];

describe('path segments that cannot name anything', () => {
  const routes = (bad: string): Array<[string, string, unknown?]> => [
    ['POST', `/api/companies/${bad}/cost-events`, { agentId, provider: 'p', model: 'm', costCents: 1, occurredAt: new Date().toISOString() }],
    ['GET', `/api/companies/${bad}/costs/summary`],
    ['PATCH', `/api/agents/${bad}/budgets`, { budgetMonthlyCents: 5 }],
    ['POST', `/api/companies/${companyId}/budget-incidents/${bad}/resolve`, { action: 'keep_paused' }],
    ['POST', `/api/plugins/echo/companies/${bad}/notes`, { text: 'x' }],
    ['GET', `/api/plugins/${bad}`],
    ['POST', `/api/plugins/${bad}/enable`, {}],
    ['DELETE', `/api/plugins/${bad}`],
    ['GET', `/api/plugins/${bad}/jobs`],
    ['GET', `/api/companies/${bad}`],
    ['GET', `/api/agents/${bad}?companyId=${companyId}`],
    ['POST', `/api/agents/me/secrets/${bad}/value`],
    ['GET', `/api/issues/${bad}/activity`],
    ['GET', `/api/heartbeat-runs/${bad}/issues`],
  ];
  for (const [label, bad] of SEGMENTS) {
    it(`answer 404 with the JSON error body for ${label}`, async () => {
      const answers = [];
      for (const [method, path, body] of routes(bad)) {
        const res = await t.api.request(method, path, body === undefined ? {} : { body });
        answers.push({ route: `${method} ${path}`, status: res.status, code: res.body?.code, error: typeof res.body?.error });
      }
      expect(answers).toEqual(answers.map(({ route }) => ({ route, status: 404, code: 'not_found', error: 'string' })));
    });
  }

  it('keeps decodable paths working, an encoded slash included', async () => {
    expect((await t.api.get(`/api/companies/${companyId}/costs/summary`)).status).toBe(200);
    expect((await t.api.get(`/api/companies/${encodeURIComponent(companyId)}`)).status).toBe(200);
    const res = await t.api.get('/api/plugins/echo%2Fx');
    expect([res.status, res.body.code]).toEqual([404, 'plugin_not_found']);
  });
});
