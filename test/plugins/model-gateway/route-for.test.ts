import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { addProvider, LOCAL_PROVIDERS } from './helpers.ts';

/** The `route-for` service, asked by a plugin the way a local adapter asks it. */
const ASKER = fileURLToPath(new URL('./fixtures/route-asker', import.meta.url));
let t: TestKernel;
beforeAll(async () => {
  t = await startTestKernel(LOCAL_PROVIDERS, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, ASKER);
});
afterAll(async () => { await t?.stop(); });

it('answers the named provider, or the company\'s default of the kind; null for none and when there is none; never another company\'s', async () => {
  const company = await createCompany(t.api);
  const other = await createCompany(t.api);
  const agent = await createAgent(t.api, company.id);
  const ask = async (body: Record<string, unknown>, companyId = company.id) => {
    const res = await t.api.post(`/api/plugins/route-asker/companies/${companyId}/ask`, { agentId: agent.id, ...body });
    expect(res.status, res.text).toBe(200);
    return res.body.route;
  };
  expect(await ask({ kind: 'anthropic' })).toBeNull();
  const plain = await addProvider(t.api, company.id, { name: 'Plain', baseUrl: 'http://127.0.0.1:9' });
  const main = await addProvider(t.api, company.id, { name: 'Main', baseUrl: 'http://127.0.0.1:9', isDefault: true });
  await addProvider(t.api, other.id, { name: 'Elsewhere', kind: 'openai', baseUrl: 'http://127.0.0.1:9', isDefault: true });
  expect(await ask({ kind: 'anthropic' })).toEqual({ providerId: main.id, kind: 'anthropic', path: `/api/llm/${main.id}` });
  expect(await ask({ kind: 'anthropic', providerName: 'Plain' })).toEqual({ providerId: plain.id, kind: 'anthropic', path: `/api/llm/${plain.id}` });
  expect(await ask({ kind: 'anthropic', providerName: 'none' })).toBeNull();
  expect(await ask({ kind: 'openai' })).toBeNull();
  // A name the company does not have (another company's included), or a provider of another kind, is refused: never a quiet fallback.
  for (const [body, code] of [
    [{ kind: 'openai', providerName: 'Elsewhere' }, 'model_provider_not_found'],
    [{ kind: 'anthropic', providerName: 'Typo' }, 'model_provider_not_found'],
    [{ kind: 'openai', providerName: 'Plain' }, 'model_provider_kind_mismatch'],
  ] as const) {
    const res = await t.api.post(`/api/plugins/route-asker/companies/${company.id}/ask`, { agentId: agent.id, ...body });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 422, code });
    expect(res.body.error).toContain('adapterConfig.modelProvider');
  }
});
