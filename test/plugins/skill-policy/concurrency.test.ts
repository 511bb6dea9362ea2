import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createCompany } from '../../support/fixtures.ts';
import { activities, document, policyPath, rule } from './helpers.ts';

let t: TestKernel;
let peer: PeerKernel;
beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

const statuses = (answers: Array<{ status: number }>) => answers.map((a) => a.status).sort();

describe('concurrent replaces with the same expectedRevision', () => {
  it('exactly one wins from revision 0 and from revision N; the others get 409 with the winner\'s revision', async () => {
    const company = await createCompany(t.api);
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => t.api.put(policyPath(company.id), document({ rules: [rule({ id: `writer-${i}` })] }))));
    expect(statuses(first)).toEqual([200, ...Array(11).fill(409)]);
    for (const lost of first.filter((a) => a.status === 409)) expect(lost.body.details).toEqual({ expectedRevision: 0, currentRevision: 1 });
    const winner = first.find((a) => a.status === 200)!.body;
    expect((await t.api.get(policyPath(company.id))).body).toEqual(winner);

    const second = await Promise.all(Array.from({ length: 12 }, (_, i) => t.api.put(policyPath(company.id), document({ expectedRevision: 1, rules: [rule({ id: `second-${i}` })] }))));
    expect(statuses(second)).toEqual([200, ...Array(11).fill(409)]);
    for (const lost of second.filter((a) => a.status === 409)) expect(lost.body.details).toEqual({ expectedRevision: 1, currentRevision: 2 });
    expect(await activities(t, company.id, 'company.skill_policy_replaced')).toHaveLength(2);
  });

  it('from two Keel processes on one database: exactly one wins', async () => {
    for (const expectedRevision of [0, 1]) {
      const company = await createCompany(t.api);
      if (expectedRevision === 1) expect((await t.api.put(policyPath(company.id), document())).status).toBe(200);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? peer.api : t.api).put(policyPath(company.id), document({ expectedRevision, rules: [rule({ id: `p${i}` })] }))));
      expect(statuses(answers)).toEqual([200, ...Array(9).fill(409)]);
      const stored = (await peer.api.get(policyPath(company.id))).body;
      expect(stored.revision).toBe(expectedRevision + 1);
      expect(stored).toEqual(answers.find((a) => a.status === 200)!.body);
    }
  });

  it('a process that cached a compiled policy decides by the other process\'s newer document', async () => {
    const company = await createCompany(t.api);
    expect((await t.api.put(policyPath(company.id), document({ rules: [rule({ id: 'old', actions: ['skills.create'] })] }))).status).toBe(200);
    const evaluate = (api: typeof t.api) => api.post(`/api/companies/${company.id}/skill-policy/evaluate`, { action: 'skills.create', resource: {} });
    expect((await evaluate(t.api)).body.matchedRuleId).toBe(null);
    // The board is no agent: the old all_agents rule never matched it; the new role rule does.
    expect((await peer.api.put(policyPath(company.id), document({ expectedRevision: 1, rules: [rule({ id: 'new', actions: ['skills.create'], subject: { type: 'roles', roles: ['board'] } })] }))).status).toBe(200);
    expect((await evaluate(t.api)).body).toMatchObject({ matchedRuleId: 'new', policyRevision: 2 });
    expect((await peer.api.delete(policyPath(company.id))).status).toBe(200);
    expect((await evaluate(t.api)).body).toMatchObject({ reason: 'no_policy_default', policyRevision: 0 });
  });
});
