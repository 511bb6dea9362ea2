import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { runWhen, wakeOk } from './helpers.ts';

/** The http adapter against a local server (loopback allowed for the runtime by the operator). */
let t: TestKernel;
let server: Server;
let url: string;
const received: Array<{ url: string; headers: IncomingHttpHeaders; body: any }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(body || 'null') });
      if (req.url === '/agent/broken') { res.writeHead(500).end('{"error":"no"}'); return; }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, sessionId: 'http-session-1', usage: { provider: 'remote', model: 'm1', costCents: 2, inputTokens: 10 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await startTestKernel({ plugins: { privateNetworkHosts: ['runtime@127.0.0.1'] } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await t?.stop();
  server?.close();
});

it('posts the payload template plus agentId, runId, companyId and wake, the token in a header; a 2xx succeeds with the answer as resultJson and its usage as a cost event', async () => {
  const company = await createCompany(t.api, { name: 'Http Co' });
  const agent = await createAgent(t.api, company.id, { adapterType: 'http', adapterConfig: { url: `${url}/agent/run`, payloadTemplate: { team: 'blue' }, headers: { 'x-team': 'blue' } } });
  const { run: queued } = await wakeOk(t.api, agent.id, { reason: 'remote work', payload: { taskKey: 'remote' } });
  const run = await runWhen(t, queued.id);
  expect(run).toMatchObject({ status: 'succeeded', httpStatus: 200, resultJson: { ok: true, sessionId: 'http-session-1' }, usageJson: { reports: 1, costCents: 2 }, sessionIdAfter: 'http-session-1' });
  const request = received.find((entry) => entry.body?.runId === run.id)!;
  expect(request.body).toEqual({
    team: 'blue', agentId: agent.id, runId: run.id, companyId: company.id,
    wake: { source: 'on_demand', triggerDetail: 'manual', reason: 'remote work', payload: { taskKey: 'remote' }, issueId: null, taskKey: 'remote', sessionId: null },
  });
  expect(request.headers['x-team']).toBe('blue');
  expect(request.headers.authorization).toMatch(/^Bearer .+/);
  expect(JSON.stringify(request.body)).not.toContain(request.headers.authorization!.slice(7));
  const { rows } = await t.sql.query('select cost_cents, provider, source from plugin_costs.cost_events where heartbeat_run_id = $1', [run.id]);
  expect(rows).toEqual([{ cost_cents: '2', provider: 'remote', source: 'adapter' }]);
  // The session comes back in the next wake of the same task.
  const next = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { taskKey: 'remote' } })).run.id);
  expect(received.find((entry) => entry.body?.runId === next.id)!.body.wake.sessionId).toBe('http-session-1');
});

it('fails on a non-2xx answer', async () => {
  const company = await createCompany(t.api, { name: 'Broken Co' });
  const agent = await createAgent(t.api, company.id, { adapterType: 'http', adapterConfig: { url: `${url}/agent/broken` } });
  const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
  expect(run).toMatchObject({ status: 'failed', httpStatus: 500 });
});
