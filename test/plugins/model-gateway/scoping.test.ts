import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, boardToken, createCompany, insertUser } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { addProvider, LOCAL_PROVIDERS, providerBody } from './helpers.ts';

/**
 * Company scoping of the provider and limits routes in authenticated mode: a board user reaches
 * the providers of its own companies only, and a refusal changes nothing.
 */
let t: TestKernel;
let admin: Api;
let member: Api;
let outsider: Api;
let mine: any;
let theirs: any;
let myProvider: any;
let theirProvider: any;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated', ...LOCAL_PROVIDERS }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  admin = t.api.as(await boardToken(t, await insertUser(t, { admin: true })));
  const memberId = await insertUser(t);
  member = t.api.as(await boardToken(t, memberId));
  outsider = t.api.as(await boardToken(t, await insertUser(t)));
  mine = await createCompany(admin);
  theirs = await createCompany(admin);
  await addMember(t, mine.id, memberId, 'owner');
  myProvider = await addProvider(admin, mine.id, { baseUrl: 'http://127.0.0.1:9' });
  theirProvider = await addProvider(admin, theirs.id, { baseUrl: 'http://127.0.0.1:9' });
});
afterAll(async () => { await t?.stop(); });

const snapshot = async () => JSON.stringify((await t.sql.query('select * from plugin_model_gateway.providers order by id')).rows)
  + JSON.stringify((await t.sql.query('select * from plugin_model_gateway.limits order by company_id')).rows)
  + (await t.sql.query('select count(*)::int as n from secrets')).rows[0].n;

describe('provider routes in authenticated mode', () => {
  it('a member reaches its own company\'s providers', async () => {
    expect((await member.get(`/api/companies/${mine.id}/model-providers`)).body.map((p: any) => p.id)).toEqual([myProvider.id]);
    expect((await member.get(`/api/model-providers/${myProvider.id}`)).status).toBe(200);
    expect((await member.put(`/api/companies/${mine.id}/model-gateway/limits`, { callsPerMinute: 10, tokensPerMinute: null })).status).toBe(200);
  });

  it('another company\'s providers and limits are refused (401 without credentials, 403 for a user of another company) and nothing changes', async () => {
    const before = await snapshot();
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/api/companies/${theirs.id}/model-providers`],
      ['POST', `/api/companies/${theirs.id}/model-providers`, providerBody({ baseUrl: 'http://127.0.0.1:9', apiKey: 'sk-never-stored' })],
      ['GET', `/api/model-providers/${theirProvider.id}`],
      ['PATCH', `/api/model-providers/${theirProvider.id}`, { name: 'Taken over', apiKey: 'sk-never-stored' }],
      ['DELETE', `/api/model-providers/${theirProvider.id}`],
      ['POST', `/api/model-providers/${theirProvider.id}/test`, { model: 'x' }],
      ['GET', `/api/companies/${theirs.id}/model-gateway/limits`],
      ['PUT', `/api/companies/${theirs.id}/model-gateway/limits`, { callsPerMinute: 1, tokensPerMinute: 1 }],
    ];
    for (const [method, path, body] of routes) {
      const anonymous = await t.api.request(method, path, { body });
      expect(anonymous.status, `${method} ${path}`).toBe(401);
      for (const api of [member, outsider]) {
        const res = await api.request(method, path, { body });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
        expect(res.body.code).toBe('company_access_denied');
        expect(res.text).not.toContain(theirProvider.name);
      }
    }
    expect(await snapshot()).toBe(before);
  });
});
