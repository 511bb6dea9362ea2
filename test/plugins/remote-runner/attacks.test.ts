import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import type { RunServer } from '../../fixtures/run-server.ts';
import { runWhen, waitFor, wakeOk } from '../runtime/helpers.ts';
import { API_KEY, logOf, remoteAgent, startRemoteWorld } from './helpers.ts';

/** Attacks on the remote runner through a run server that misbehaves on request (issue 25, point 4). */
let t: TestKernel;
let company: any;
let server: RunServer;

beforeAll(async () => {
  // The operator lists a name the run host reaches this instance by (server.allowedHostnames).
  ({ t, company, server } = await startRemoteWorld('Remote Attacks Co', { server: { allowedHostnames: ['keel.internal.example'] } }));
});
afterAll(async () => {
  await t?.stop();
  await server?.stop();
});

const count = async (sql: string, params: unknown[]) => Number((await t.sql.query(sql, params)).rows[0].n);

describe('addresses are checked when the agent is written, as at connection', () => {
  const create = (adapterConfig: Record<string, unknown>) =>
    t.api.post(`/api/companies/${company.id}/agents`, { name: `Remote ${Math.random().toString(36).slice(2, 8)}`, adapterType: 'eta_gateway', adapterConfig });
  const written = async () => ({
    agents: await count('select count(*)::int as n from agents where company_id = $1', [company.id]),
    secrets: await count('select count(*)::int as n from secrets where company_id = $1', [company.id]),
    activity: await count('select count(*)::int as n from activity_log where company_id = $1', [company.id]),
  });

  it('a metadata address as apiBaseUrl is refused on create even with the insecure flag, naming the field; nothing is written', async () => {
    const before = await written();
    for (const apiBaseUrl of ['http://169.254.169.254/latest', 'http://[fd00:ec2::254]/', 'http://metadata.google.internal/', 'http://0xa9fea9fe/']) {
      const res = await create({ apiBaseUrl, apiKey: API_KEY, dangerouslyAllowInsecureRemoteHttp: true });
      expect([res.status, res.body.code, res.body.details?.path], `${apiBaseUrl}: ${res.text}`).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl']);
      expect(res.body.details.reason).toBe('address_denied');
    }
    // A private address the operator has not opened to the plugin is refused too (as the executor would).
    const lan = await create({ apiBaseUrl: 'http://10.1.2.3:8080', apiKey: API_KEY, dangerouslyAllowInsecureRemoteHttp: true });
    expect([lan.status, lan.body.details?.path, lan.body.details?.reason]).toEqual([422, 'adapterConfig.apiBaseUrl', 'address_denied']);
    expect(await written()).toEqual(before);
  });

  it('a foreign serviceApiUrl is refused on create; this instance\'s own address is accepted', async () => {
    const before = await written();
    for (const serviceApiUrl of ['https://collector.example.net/keel', 'http://127.0.0.1:1/', `${t.url.replace('127.0.0.1', '127.0.0.2')}/`]) {
      const res = await create({ apiBaseUrl: `${server.url}/`, apiKey: API_KEY, serviceApiUrl });
      expect([res.status, res.body.code, res.body.details?.path, res.body.details?.reason], `${serviceApiUrl}: ${res.text}`)
        .toEqual([422, 'invalid_adapter_config', 'adapterConfig.serviceApiUrl', 'instance_address_denied']);
    }
    expect(await written()).toEqual(before);
    const own = await create({ apiBaseUrl: `${server.url}/`, apiKey: API_KEY, serviceApiUrl: t.url });
    expect(own.status, own.text).toBe(201);
    const listed = await create({ apiBaseUrl: `${server.url}/`, apiKey: API_KEY, serviceApiUrl: 'https://keel.internal.example/' });
    expect(listed.status, listed.text).toBe(201);
  });

  it('an update to a metadata apiBaseUrl or a foreign serviceApiUrl is refused and leaves the agent as it was', async () => {
    const agent = await remoteAgent(t.api, company.id, server);
    const before = await written();
    const metadata = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { apiBaseUrl: 'http://169.254.169.254/', dangerouslyAllowInsecureRemoteHttp: true } });
    expect([metadata.status, metadata.body.code, metadata.body.details?.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl']);
    const foreign = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { serviceApiUrl: 'https://collector.example.net/' } });
    expect([foreign.status, foreign.body.code, foreign.body.details?.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.serviceApiUrl']);
    const { rows } = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(rows[0].adapter_config.apiBaseUrl).toBe(`${server.url}/api`);
    expect(rows[0].adapter_config.serviceApiUrl).toBeUndefined();
    expect(await written()).toEqual(before);
  });

  it('a foreign serviceApiUrl written before the check is refused at connection: the run server is never told it', async () => {
    const agent = await remoteAgent(t.api, company.id, server);
    await t.sql.query(`update agents set adapter_config = adapter_config || '{"serviceApiUrl": "https://collector.example.net/"}'::jsonb where id = $1`, [agent.id]);
    const creates = server.requests.length;
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, (ended) => !['queued', 'running'].includes(ended.status));
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run)).toContain('instance_address_denied');
    expect(server.requests.slice(creates).filter((entry) => entry.method === 'POST')).toEqual([]);
  });
});

describe('the deadline of a remote run', () => {
  it('malformed usage events do not keep a run past timeoutSec: it is stopped on the run server and ends timed_out', async () => {
    const malformedUsage = [
      'not json {', '{"costUsd": 1e308, "inputTokens": 1e30}', '{"costUsd": -5, "outputTokens": -1}', '{"costCents": "NaN"}', 'null', '[1, 2]',
      '{"inputTokens": 99999999999999999999999, "model": ' + JSON.stringify('m'.repeat(300)) + '}', '{"usage": {"costUsd": "lots"}}',
    ];
    server.reset({}, { end: 'never', steps: Array.from({ length: 400 }, (_, index) => `tick ${index}`), stepDelayMs: 15, malformedUsage });
    const agent = await remoteAgent(t.api, company.id, server, { timeoutSec: 2 });
    const { run: queued } = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, queued.id, (ended) => !['queued', 'running'].includes(ended.status), 60_000);
    expect(run).toMatchObject({ status: 'timed_out', errorCode: 'timeout' });
    const remote = server.runFor(run.id)!;
    await waitFor(async () => remote.stopped, 'the stop call');
    const { rows } = await t.sql.query('select deadline_at, started_at, status from executions where run_id = $1', [run.id]);
    expect(rows[0].status).toBe('timed_out');
    expect(new Date(rows[0].deadline_at).getTime() - new Date(rows[0].started_at).getTime()).toBe(2000);
  });

  it('the deadline is kept in the database: a run whose deadline passed is stopped by the heartbeat of the process that follows it', async () => {
    server.reset({}, { end: 'never', steps: ['working'] });
    const agent = await remoteAgent(t.api, company.id, server, { timeoutSec: 3600 });
    const { run: queued } = await wakeOk(t.api, agent.id);
    await waitFor(async () => (await t.sql.query(`select 1 from executions where run_id = $1 and remote_run_url is not null`, [queued.id])).rows[0], 'the followed run');
    // The deadline as another process would see it: it has passed.
    await t.sql.query(`update executions set deadline_at = now() - interval '1 second' where run_id = $1`, [queued.id]);
    const run = await runWhen(t, queued.id, (ended) => !['queued', 'running'].includes(ended.status), 60_000);
    expect(run).toMatchObject({ status: 'timed_out', errorCode: 'timeout' });
    await waitFor(async () => server.runFor(run.id)!.stopped, 'the stop call');
  });
});

describe('remote run ids are scoped to the run that created them', () => {
  it("a run server answering with another company's remote run id does not mix that run's text into this run's log, nor stop it", async () => {
    const other = await createCompany(t.api, { name: 'Neighbour Co' });
    server.reset({}, { end: 'never', steps: Array.from({ length: 200 }, (_, index) => ` neighbour-secret-${index}`), stepDelayMs: 30 });
    const victim = await remoteAgent(t.api, other.id, server);
    const { run: victimRun } = await wakeOk(t.api, victim.id);
    await waitFor(async () => (await t.sql.query(`select 1 from executions where run_id = $1 and remote_run_url is not null`, [victimRun.id])).rows[0], "the neighbour's followed run");
    server.reset({ answerWithRunOf: victimRun.id }, { end: 'never' });
    const agent = await remoteAgent(t.api, company.id, server);
    const { run: queued } = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, queued.id);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'remote_run_id_taken' });
    const log = await logOf(t, run.id);
    expect(log).not.toContain('neighbour-secret');
    expect(log).toContain('another Keel run');
    expect(server.runFor(victimRun.id)!.stopped).toBe(false);
    const borrowed = server.runFor(victimRun.id)!.id;
    expect(server.requests.filter((entry) => entry.path.startsWith(`/api/v1/runs/${borrowed}`) && entry.headers['idempotency-key'] === undefined
      && entry.headers['x-service-api-key'] !== server.runFor(victimRun.id)!.headers['x-service-api-key'])).toEqual([]);
    server.reset();
    expect((await t.api.post(`/api/heartbeat-runs/${victimRun.id}/cancel`, {})).status).toBe(200);
    await runWhen(t, victimRun.id, (ended) => ended.status === 'cancelled');
  });

  it("a status answer about another company's run is not taken as this run's: its result does not become this run's", async () => {
    const other = await createCompany(t.api, { name: 'Finished Neighbour Co' });
    server.reset({}, { steps: ['neighbour-result-secret'] });
    const victim = await remoteAgent(t.api, other.id, server);
    const done = await runWhen(t, (await wakeOk(t.api, victim.id)).run.id);
    expect(done).toMatchObject({ status: 'succeeded', resultJson: { text: 'neighbour-result-secret' } });
    server.reset({ streamNeverOpens: true, statusOfRunOf: done.id }, { end: 'never' });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'remote_protocol_error' });
    expect(JSON.stringify(run)).not.toContain('neighbour-result-secret');
    expect(await logOf(t, run.id)).not.toContain('neighbour-result-secret');
    server.reset();
  });
});

describe('an imported agent is written as a created one', () => {
  it('a company package whose eta_gateway agent names a metadata apiBaseUrl is refused at import; nothing is written', async () => {
    const source = await createCompany(t.api, { name: 'Package Source' });
    await remoteAgent(t.api, source.id, server);
    const exported = await t.api.post(`/api/companies/${source.id}/exports`, {});
    expect(exported.status, exported.text).toBe(200);
    const pkg = exported.body;
    const agent = pkg.manifest.agents.find((entry: any) => entry.adapterType === 'eta_gateway');
    agent.adapterConfig = { ...agent.adapterConfig, apiBaseUrl: 'http://169.254.169.254/', dangerouslyAllowInsecureRemoteHttp: true };
    const target = await createCompany(t.api, { name: 'Package Target' });
    const inputs = Object.fromEntries((pkg.manifest.inputs ?? []).map((input: any) => [input.name, `value-of-${input.name}`]));
    const before = await count('select count(*)::int as n from agents where company_id = $1', [target.id]);
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, inputs });
    expect([res.status, res.body.code, res.body.details?.path], res.text).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl']);
    expect(await count('select count(*)::int as n from agents where company_id = $1', [target.id])).toBe(before);
    expect(await count('select count(*)::int as n from secrets where company_id = $1', [target.id])).toBe(0);
  });
});
