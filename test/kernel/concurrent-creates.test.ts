import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type ApiResponse, type TestKernel } from '../support/harness.ts';

/**
 * The same create sent several times at once never answers 500: the loser of a race on a
 * unique key gets the 409 a sequential duplicate gets, and creates that allocate a free name
 * or number (issue prefixes, shortnames, revision numbers) all succeed.
 */
const ECHO = fileURLToPath(new URL('../host/fixtures/echo', import.meta.url));
let t: TestKernel;
let authed: TestKernel;
let companyId: string;
let agentId: string;

beforeAll(async () => {
  t = await startTestKernel();
  authed = await startTestKernel({ deploymentMode: 'authenticated' });
  companyId = (await createCompany(t.api)).id;
  agentId = (await createAgent(t.api, companyId)).id;
});
afterAll(async () => {
  await t?.stop();
  await authed?.stop();
});

const N = 10;
const burst = (send: () => Promise<ApiResponse>) => Promise.all(Array.from({ length: N }, send));
const tally = (answers: ApiResponse[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status >= 400 ? `${a.status} ${a.body?.code}` : String(a.status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

describe('concurrent identical requests', () => {
  it('secret grants: one 201, the others 409 secret_grant_conflict', async () => {
    const secret = (await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'GRANTED', value: 'v' })).body;
    // The race is narrow: several rounds make losing it certain rather than likely.
    for (let round = 0; round < 5; round++) {
      const key = `GRANTED_${round}`;
      const answers = await burst(() => t.api.post(`/api/agents/${agentId}/secret-grants`, { secretId: secret.id, key, delivery: 'api' }));
      expect(tally(answers)).toEqual({ 201: 1, '409 secret_grant_conflict': N - 1 });
      expect((await t.sql.query('select count(*)::int as n from agent_secret_grants where agent_id = $1 and key = $2', [agentId, key])).rows[0].n).toBe(1);
    }
  });

  it('secrets: one 201, the others 409 secret_name_conflict', async () => {
    const answers = await burst(() => t.api.post(`/api/companies/${companyId}/secrets`, { name: 'SAME_NAME', value: 'v' }));
    expect(tally(answers)).toEqual({ 201: 1, '409 secret_name_conflict': N - 1 });
  });

  it('plugin installs of one folder: one 201, the others 409 plugin_already_installed', async () => {
    const answers = await burst(() => t.api.post('/api/plugins/install', { localPath: ECHO }));
    expect(tally(answers)).toEqual({ 201: 1, '409 plugin_already_installed': N - 1 });
  });

  it('sign-ups with one email: one 201, the others 409 email_taken', async () => {
    const answers = await burst(() => authed.api.post('/api/auth/sign-up', { email: 'same@example.test', password: 'correct horse battery' }));
    expect(tally(answers)).toEqual({ 201: 1, '409 email_taken': N - 1 });
  });

  it('companies, agents, keys, grants, memberships, revisions and rotations of the same input all succeed', async () => {
    const secret = (await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'ROTATED', value: 'v' })).body;
    const all = (status: number) => ({ [status]: N });
    const bursts: Array<[string, () => Promise<ApiResponse>, Record<string, number>]> = [
      ['company', () => t.api.post('/api/companies', { name: 'Twin Company' }), all(201)],
      ['agent', () => t.api.post(`/api/companies/${companyId}/agents`, { name: 'Twin', role: 'engineer' }), all(201)],
      ['agent key', () => t.api.post(`/api/agents/${agentId}/keys`, { name: 'twin' }), all(201)],
      // The first creates the grant, the others replace it with the same scope.
      ['permission grant', () => t.api.put(`/api/companies/${companyId}/permission-grants`, { principalType: 'agent', principalId: agentId, permissionKey: 'tasks:assign' }), { 201: 1, 200: N - 1 }],
      // Setting the state a membership already has is a successful no-op.
      ['resource membership', () => t.api.put(`/api/companies/${companyId}/resource-memberships/me/agents/${agentId}`, { state: 'left' }), all(200)],
      ['agent update', () => t.api.patch(`/api/agents/${agentId}`, { title: 'Same title' }), all(200)],
      ['secret rotation', () => t.api.post(`/api/secrets/${secret.id}/rotate`, { value: 'next' }), all(200)],
      ['activity entry', () => t.api.post(`/api/companies/${companyId}/activity`, { actorId: 'ops', action: 'twin.logged', entityType: 'e', entityId: '1' }), all(201)],
    ];
    const outcomes: Record<string, Record<string, number>> = {};
    for (const [label, send] of bursts) outcomes[label] = tally(await burst(send));
    expect(outcomes).toEqual(Object.fromEntries(bursts.map(([label, , expected]) => [label, expected])));
  });
  it('identical changes and deletes at once: never a 5xx', async () => {
    const company = (await createCompany(t.api)).id;
    const agent = (await createAgent(t.api, company)).id;
    const secret = (await t.api.post(`/api/companies/${company}/secrets`, { name: 'DOOMED', value: 'v' })).body.id;
    const grant = (await t.api.post(`/api/agents/${agent}/secret-grants`, { secretId: secret, key: 'DOOMED', delivery: 'api' })).body.id;
    const key = (await t.api.post(`/api/agents/${agent}/keys`, { name: 'doomed' })).body.id;
    const challenge = (await t.api.post('/api/cli-auth/challenges', { clientName: 'twin' })).body.id;
    const bursts: Array<[string, () => Promise<ApiResponse>]> = [
      ['plugin enable', () => t.api.post('/api/plugins/echo/enable', {})],
      ['plugin config', () => t.api.post('/api/plugins/echo/config', { config: {} })],
      ['plugin disable', () => t.api.post('/api/plugins/echo/disable', {})],
      ['agent pause', () => t.api.post(`/api/agents/${agent}/pause`, {})],
      ['challenge approval', () => t.api.post(`/api/cli-auth/challenges/${challenge}/approve`, {})],
      ['key revocation', () => t.api.delete(`/api/agents/${agent}/keys/${key}`)],
      ['grant revocation', () => t.api.delete(`/api/agents/${agent}/secret-grants/${grant}`)],
      ['secret deletion', () => t.api.delete(`/api/secrets/${secret}`)],
      ['agent termination', () => t.api.post(`/api/agents/${agent}/terminate`, {})],
      ['agent deletion', () => t.api.delete(`/api/agents/${agent}`)],
      ['company deletion', () => t.api.delete(`/api/companies/${company}`)],
    ];
    const failures: string[] = [];
    for (const [label, send] of bursts) {
      for (const answer of await burst(send)) {
        if (answer.status >= 500 || typeof answer.body?.code !== 'string' && answer.status >= 400) failures.push(`${label}: ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
  });
});
