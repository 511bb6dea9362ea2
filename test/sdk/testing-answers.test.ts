import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '../../sdk/testing/index.ts';

/** sdk/testing answers raw and event routes as the host would (the host's own checks are in test/host/answers.test.ts). */
const FIXTURE = fileURLToPath(new URL('../host/fixtures/answers-fx', import.meta.url));
const COMPANY = '00000000-0000-4000-8000-00000000000a';
let host: TestHost;

beforeAll(async () => { host = await createTestHost(FIXTURE); });
afterAll(() => host?.dispose());

describe('createTestHost with raw and streamed answers', () => {
  it('answers a string on a raw route with the declared type, and another declared type when the handler names it', async () => {
    expect(await host.callRoute('notes', { params: { companyId: COMPANY }, companyId: COMPANY })).toMatchObject({ status: 200, body: `# Notes of ${COMPANY}\n\n- first\n`, headers: { 'content-type': 'text/markdown' } });
    const csv = await host.callRoute('notes', { params: { companyId: COMPANY }, query: { format: 'csv' }, companyId: COMPANY });
    expect(csv.headers).toMatchObject({ 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="notes.csv"' });
  });

  it('answers events and the held channel, and refuses what the route does not declare', async () => {
    const live = await host.callRoute('live', { params: { companyId: COMPANY }, headers: { 'last-event-id': '3' }, companyId: COMPANY });
    expect(live).toMatchObject({ status: 200, events: [{ event: 'hello', id: '4', data: { companyId: COMPANY, resumedAfter: 3 } }], stream: { channel: 'updates' } });
    expect((await host.callRoute('plain-json', { params: { how: 'events' } })).body).toMatchObject({ code: 'plugin_invalid_response' });
    expect((await host.callRoute('plain-json', { params: { how: 'typed' } })).status).toBe(502);
  });
});

describe('createTestHost with a proxy route', () => {
  const PROXY_FX = fileURLToPath(new URL('../host/fixtures/proxy-fx', import.meta.url));
  const AGENT = { type: 'agent' as const, id: '00000000-0000-4000-8000-0000000000a1', agentId: '00000000-0000-4000-8000-0000000000a1' };

  it('answers the spec a respondProxy gives (the kernel forwards it), and serves ctx.http.checkProxyTarget', async () => {
    const proxyHost = await createTestHost(PROXY_FX);
    try {
      const fx = { url: 'https://api.example.com/v1/messages', secretId: '00000000-0000-4000-8000-0000000000b1', meter: 'anthropic', rates: null, limitCents: null };
      const answer = await proxyHost.callRoute('forward', { params: { wire: 'anthropic' }, body: { model: 'm', fx }, actor: AGENT, companyId: COMPANY });
      expect(answer).toMatchObject({ status: 200, proxy: { url: fx.url, meter: 'anthropic', credential: { secretId: fx.secretId, header: 'x-api-key' }, report: { agentId: AGENT.agentId, model: 'm' } } });
      expect((await proxyHost.callRoute('forward', { params: { wire: 'anthropic' }, body: { fx } })).status).toBe(401);
      expect((await proxyHost.callRoute('check', { body: { url: 'https://api.example.com' } })).body).toEqual({ ok: true, reason: null });
      expect((await proxyHost.callRoute('check', { body: { url: 'http://api.example.com' } })).body).toMatchObject({ ok: false });
    } finally {
      proxyHost.dispose();
    }
  });
});
