import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentKey, createCompany } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import type { RunServer } from '../../fixtures/run-server.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';
import { API_KEY, logOf, remoteAgent, startRemoteWorld } from './helpers.ts';

/** The eta_gateway configuration (validated by the remote-runner plugin through the kernel point), session keys, and the attacks on both. */
let t: TestKernel;
let company: any;
let server: RunServer;

beforeAll(async () => {
  ({ t, company, server } = await startRemoteWorld('Config Co'));
});
afterAll(async () => {
  await t?.stop();
  await server?.stop();
});

const agentCount = async () => Number((await t.sql.query('select count(*)::int as n from agents where company_id = $1', [company.id])).rows[0].n);
const create = (adapterConfig: Record<string, unknown>) => t.api.post(`/api/companies/${company.id}/agents`, { name: `Remote ${Math.random().toString(36).slice(2, 8)}`, adapterType: 'eta_gateway', adapterConfig });

describe('configuration on create and update', () => {
  it('fills the defaults, maps a dashboard root or chat URL to its /api and stores a plain apiKey as a secret reference', async () => {
    const res = await create({ apiBaseUrl: `${server.url}/`, apiKey: API_KEY });
    expect(res.status, res.text).toBe(201);
    const config = res.body.adapterConfig;
    expect(config).toMatchObject({
      apiBaseUrl: `${server.url}/api`, sessionKeyStrategy: 'issue', timeoutSec: 600, eventReconnectMs: 2000, dangerouslyAllowInsecureRemoteHttp: false,
      apiKey: { type: 'secret_ref', secretId: expect.any(String), version: 'latest' },
    });
    const { rows } = await t.sql.query('select company_id from secrets where id = $1', [config.apiKey.secretId]);
    expect(rows).toEqual([{ company_id: company.id }]);
    const chat = await create({ apiBaseUrl: 'https://runner.example.com/team/chat/session-1', apiKey: API_KEY });
    expect(chat.body.adapterConfig.apiBaseUrl).toBe('https://runner.example.com/team/api');
    const api = await create({ apiBaseUrl: 'https://runner.example.com/api/', apiKey: API_KEY });
    expect(api.body.adapterConfig.apiBaseUrl).toBe('https://runner.example.com/api');
  });

  it('refuses each invalid field with 422 naming it, and writes nothing', async () => {
    const before = await agentCount();
    const secretsBefore = Number((await t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ apiKey: API_KEY }, 'adapterConfig.apiBaseUrl'],
      [{ apiBaseUrl: 'ftp://runner.example.com', apiKey: API_KEY }, 'adapterConfig.apiBaseUrl'],
      [{ apiBaseUrl: 'https://user:pw@runner.example.com', apiKey: API_KEY }, 'adapterConfig.apiBaseUrl'],
      [{ apiBaseUrl: 'https://runner.example.com' }, 'adapterConfig.apiKey'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: { type: 'secret_ref', secretId: 'nope' } }, 'adapterConfig.apiKey.secretId'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, sessionKeyStrategy: 'user' }, 'adapterConfig.sessionKeyStrategy'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, timeoutSec: 0 }, 'adapterConfig.timeoutSec'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, eventReconnectMs: 'soon' }, 'adapterConfig.eventReconnectMs'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, dangerouslyAllowInsecureRemoteHttp: 'yes' }, 'adapterConfig.dangerouslyAllowInsecureRemoteHttp'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, serviceApiUrl: 'not a url' }, 'adapterConfig.serviceApiUrl'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, headers: { 'x-team': 5 } }, 'adapterConfig.headers.x-team'],
      [{ apiBaseUrl: 'https://runner.example.com', apiKey: API_KEY, instructions: 42 }, 'adapterConfig.instructions'],
    ];
    for (const [config, path] of cases) {
      const res = await create(config);
      expect([res.status, res.body.code, res.body.details?.path], JSON.stringify(config)).toEqual([422, 'invalid_adapter_config', path]);
    }
    expect(await agentCount()).toBe(before);
    expect(Number((await t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n)).toBe(secretsBefore);
  });

  it('refuses plain HTTP to a host that is not loopback unless dangerouslyAllowInsecureRemoteHttp; loopback HTTP is allowed where the operator opened it', async () => {
    const refused = await create({ apiBaseUrl: 'http://runner.example.com', apiKey: API_KEY });
    expect([refused.status, refused.body.code, refused.body.details.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl']);
    expect((await create({ apiBaseUrl: 'http://runner.example.com', apiKey: API_KEY, dangerouslyAllowInsecureRemoteHttp: true })).status).toBe(201);
    expect((await create({ apiBaseUrl: 'http://127.0.0.1:9000', apiKey: API_KEY })).status).toBe(201);
    // Checked at write as at connection: a loopback host the operator did not open to the plugin (only remote-runner@127.0.0.1 is) is refused.
    const closed = await create({ apiBaseUrl: 'http://localhost:9000', apiKey: API_KEY });
    expect([closed.status, closed.body.code, closed.body.details.path, closed.body.details.reason]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl', 'address_denied']);
  });

  it('validates the configuration an update leads to; a new plain apiKey becomes a new secret reference', async () => {
    const agent = await remoteAgent(t.api, company.id, server);
    const bad = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { timeoutSec: -1 } });
    expect([bad.status, bad.body.code, bad.body.details.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.timeoutSec']);
    const insecure = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { apiBaseUrl: 'http://runner.example.com' } });
    expect([insecure.status, insecure.body.details.path]).toEqual([422, 'adapterConfig.apiBaseUrl']);
    const ok = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { timeoutSec: 120, apiKey: 'rk-rotated-key-000000' } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.adapterConfig).toMatchObject({ timeoutSec: 120, eventReconnectMs: 50, apiKey: { type: 'secret_ref' } });
    expect(ok.body.adapterConfig.apiKey.secretId).not.toBe(agent.adapterConfig.apiKey.secretId);
    // Switching another agent to eta_gateway validates too.
    const other = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Plain http', adapterType: 'http', adapterConfig: { url: 'https://x.example.com' } });
    const switched = await t.api.patch(`/api/agents/${other.body.id}`, { adapterType: 'eta_gateway' });
    expect([switched.status, switched.body.details?.path]).toEqual([422, 'adapterConfig.apiBaseUrl']);
  });

  it('a rollback restores a configuration only as the plugin validates it: an invalid snapshot is refused, a plain key stored as a secret', async () => {
    const agent = await remoteAgent(t.api, company.id, server);
    const { rows: [latest] } = await t.sql.query('select snapshot, revision_number from agent_config_revisions where agent_id = $1 order by revision_number desc limit 1', [agent.id]);
    const revision = async (adapterConfig: Record<string, unknown>, number: number) => (await t.sql.query(
      `insert into agent_config_revisions (company_id, agent_id, revision_number, source, snapshot, changed_keys, created_by_user_id)
       values ($1, $2, $3, 'patch', $4::jsonb, array['adapterConfig'], 'local-board') returning id`,
      [company.id, agent.id, number, JSON.stringify({ ...latest.snapshot, adapterConfig })])).rows[0].id;
    const storedConfig = async () => (await t.sql.query('select adapter_config from agents where id = $1', [agent.id])).rows[0].adapter_config;
    const before = await storedConfig();
    const secretsBefore = Number((await t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n);

    const invalid = await revision({ ...latest.snapshot.adapterConfig, apiBaseUrl: 'ftp://runner.example.com' }, latest.revision_number + 1);
    const refused = await t.api.post(`/api/agents/${agent.id}/config-revisions/${invalid}/rollback`);
    expect([refused.status, refused.body.code, refused.body.details?.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.apiBaseUrl']);
    expect(await storedConfig()).toEqual(before);
    expect((await t.sql.query(`select count(*)::int as n from agent_config_revisions where agent_id = $1 and source = 'rollback'`, [agent.id])).rows[0].n).toBe(0);

    const plain = await revision({ ...latest.snapshot.adapterConfig, apiKey: 'rk-restored-plain-0000' }, latest.revision_number + 2);
    const restored = await t.api.post(`/api/agents/${agent.id}/config-revisions/${plain}/rollback`);
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.adapterConfig.apiKey).toMatchObject({ type: 'secret_ref', secretId: expect.any(String) });
    expect(JSON.stringify(await storedConfig())).not.toContain('rk-restored-plain-0000');
    expect(Number((await t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n)).toBe(secretsBefore + 1);
  });

  it("refuses a secret reference to another company's secret", async () => {
    const other = await createCompany(t.api, { name: 'Other Secrets Co' });
    const secret = await t.api.post(`/api/companies/${other.id}/secrets`, { name: 'their-key', value: 'theirs-0123456789' });
    expect(secret.status, secret.text).toBe(201);
    const res = await create({ apiBaseUrl: 'https://runner.example.com', apiKey: { type: 'secret_ref', secretId: secret.body.id } });
    expect([res.status, res.body.code]).toEqual([422, 'secret_ref_company_mismatch']);
  });
});

describe('session keys', () => {
  const sessionOf = (runId: string) => server.runFor(runId)!.headers['x-remote-session-key'];

  it('issue: one per issue of the agent\'s own company; agent: one for all its runs; run: one per run; none: no header; long keys hashed to 64 characters', async () => {
    server.reset();
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Remote issue' })).body;
    const byIssue = await remoteAgent(t.api, company.id, server);
    const first = await runWhen(t, (await wakeOk(t.api, byIssue.id, { payload: { issueId: issue.id } })).run.id);
    const second = await runWhen(t, (await wakeOk(t.api, byIssue.id, { payload: { issueId: issue.id } })).run.id);
    expect(sessionOf(first.id)).toBe(`keel:issue:${issue.id}`);
    expect(sessionOf(second.id)).toBe(sessionOf(first.id));
    const longTask = await runWhen(t, (await wakeOk(t.api, byIssue.id, { payload: { taskKey: 'k'.repeat(120) } })).run.id);
    expect(sessionOf(longTask.id)).toMatch(/^[0-9a-f]{64}$/);

    const byAgent = await remoteAgent(t.api, company.id, server, { sessionKeyStrategy: 'agent' });
    const a1 = await runWhen(t, (await wakeOk(t.api, byAgent.id, { payload: { issueId: issue.id } })).run.id);
    const a2 = await runWhen(t, (await wakeOk(t.api, byAgent.id)).run.id);
    expect([sessionOf(a1.id), sessionOf(a2.id)]).toEqual([`keel:agent:${byAgent.id}`, `keel:agent:${byAgent.id}`]);

    const byRun = await remoteAgent(t.api, company.id, server, { sessionKeyStrategy: 'run' });
    const r1 = await runWhen(t, (await wakeOk(t.api, byRun.id)).run.id);
    expect(sessionOf(r1.id)).toBe(`keel:run:${r1.id}`);

    const none = await remoteAgent(t.api, company.id, server, { sessionKeyStrategy: 'none' });
    const n1 = await runWhen(t, (await wakeOk(t.api, none.id)).run.id);
    expect(sessionOf(n1.id)).toBeUndefined();
    expect(server.runFor(n1.id)!.body.sessionKey).toBeNull();
  });

  it("an issue of another company cannot key a session: the wake is refused and nothing reaches the run server", async () => {
    const other = await createCompany(t.api, { name: 'Foreign Issue Co' });
    const foreign = (await t.api.post(`/api/companies/${other.id}/issues`, { title: 'Not yours' })).body;
    const agent = await remoteAgent(t.api, company.id, server);
    const before = server.requests.length;
    const res = await t.api.post(`/api/agents/${agent.id}/wakeup`, { payload: { issueId: foreign.id } });
    expect([res.status, res.body.code]).toEqual([422, 'invalid_issue']);
    expect(server.requests.length).toBe(before);
  });
});

describe('attacks', () => {
  it('configured headers cannot override authentication or the session: they are ignored with a warning in the run log; others pass', async () => {
    server.reset();
    const agent = await remoteAgent(t.api, company.id, server, {
      sessionKeyStrategy: 'run',
      headers: { Authorization: 'Bearer stolen', 'X-Remote-Session-Key': 'someone-elses-session', 'Idempotency-Key': 'fixed', 'X-Service-Api-Key': 'forged', 'x-team': 'blue' },
    });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');
    const headers = server.runFor(run.id)!.headers;
    expect(headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(headers['x-remote-session-key']).toBe(`keel:run:${run.id}`);
    expect(headers['idempotency-key']).toBe(run.id);
    expect(headers['x-service-api-key']).not.toBe('forged');
    expect(headers['x-team']).toBe('blue');
    const log = await logOf(t, run.id);
    expect(log).toContain('adapterConfig.headers.Authorization is ignored');
    expect(log).toContain('adapterConfig.headers.X-Remote-Session-Key is ignored');
  });

  it('the apiKey never appears in responses, run logs or activity', async () => {
    server.reset();
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    const key = await createAgentKey(t.api, agent.id);
    const seen = [
      JSON.stringify((await t.api.get(`/api/agents/${agent.id}`)).body),
      JSON.stringify((await t.api.get(`/api/companies/${company.id}/agents`)).body),
      JSON.stringify((await t.api.as(key).get(`/api/agents/${agent.id}`)).body),
      JSON.stringify((await t.api.get(`/api/heartbeat-runs/${run.id}`)).body),
      JSON.stringify((await t.api.get(`/api/companies/${company.id}/heartbeat-runs`)).body),
      await logOf(t, run.id),
      JSON.stringify((await t.sql.query('select * from activity_log where company_id = $1', [company.id])).rows),
      JSON.stringify((await t.sql.query('select * from agent_config_revisions where company_id = $1', [company.id])).rows),
      JSON.stringify((await t.sql.query('select * from security_audit_log where company_id = $1', [company.id])).rows),
      JSON.stringify((await t.sql.query('select payload from keel_events.outbox')).rows),
    ].join('\n');
    expect(seen).not.toContain(API_KEY);
    expect(server.runFor(run.id)!.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('an agent key of another company cannot read or wake an eta_gateway agent', async () => {
    const other = await createCompany(t.api, { name: 'Intruder Co' });
    const intruder = await t.api.post(`/api/companies/${other.id}/agents`, { name: 'Intruder', adapterType: 'http', adapterConfig: { url: 'https://x.example.com' } });
    const key = await createAgentKey(t.api, intruder.body.id);
    const agent = await remoteAgent(t.api, company.id, server);
    expect((await t.api.as(key).post(`/api/agents/${agent.id}/wakeup`, {})).status).toBe(403);
    expect((await t.api.as(key).get(`/api/agents/${agent.id}`)).status).toBe(403);
  });
});
