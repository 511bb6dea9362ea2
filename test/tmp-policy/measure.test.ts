import { fileURLToPath } from 'node:url';
import { it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel } from '../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { installAndEnable } from '../support/plugins.ts';

const CONSUMER = fileURLToPath(new URL('../plugins/skill-policy/fixtures/decide-consumer', import.meta.url));
it('measures', async () => {
  const t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CONSUMER);
  const company = await createCompany(t.api);
  const agent = await createAgent(t.api, company.id);
  const api = t.api.as(await createAgentKey(t.api, agent.id));
  const rules = Array.from({ length: 1000 }, (_, i) => ({
    id: `rule-${String(i).padStart(4, '0')}`, priority: i % 50, effect: 'deny',
    subject: i % 2 ? { type: 'roles', roles: [`role-${i}`] } : { type: 'agents', agentIds: [crypto.randomUUID()] },
    actions: ['skills.import', 'skills.install'], resources: { sourceLocators: [`https://github.com/acme/repo-${i}`] },
  }));
  console.log((await t.api.put(`/api/companies/${company.id}/skill-policy`, { schemaVersion: 1, defaultEffect: 'allow', expectedRevision: 0, rules })).status);
  const input = { action: 'skills.import', resource: { sourceType: 'git', sourceLocator: 'https://github.com/Other/Repo.git', skillKey: 'other/repo/skill' } };
  const http: number[] = [];
  for (let i = 0; i < 1100; i++) {
    const s = performance.now();
    await api.post(`/api/companies/${company.id}/skill-policy/evaluate`, input);
    if (i >= 100) http.push(performance.now() - s);
  }
  await api.post(`/api/plugins/decide-consumer/companies/${company.id}/decide-many`, { count: 200, input });
  const svc = (await api.post(`/api/plugins/decide-consumer/companies/${company.id}/decide-many`, { count: 2000, input })).body;
  const pct = (v: number[], p: number) => [...v].sort((a, b) => a - b)[Math.floor(p / 100 * v.length)];
  console.log('HTTP p50', pct(http, 50).toFixed(2), 'p99', pct(http, 99).toFixed(2));
  console.log('service p50', pct(svc.durationsMs, 50), 'p99', pct(svc.durationsMs, 99), 'mean', svc.totalMs / 2000, JSON.stringify(svc.last));
  await t.stop();
}, 300_000);
