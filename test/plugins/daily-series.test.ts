import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { installAndEnable } from '../support/plugins.ts';
import { addCost, allowGatewayCaller, settling } from './costs/helpers.ts';
import { agentScripts, processAgent, runWhen, wakeOk } from './runtime/helpers.ts';
import { runCli } from '../sdk/cli-support.ts';

/**
 * The per-day series the console's dashboard and `keel dashboard` draw: runs by outcome
 * (runtime), spend measured and reported (costs), issues by status (work), each over the last N
 * UTC days, company-scoped, with bad input refused before anything is read.
 */
const CALLER = fileURLToPath(new URL('./costs/fixtures/usage-caller', import.meta.url));
const DAY_MS = 86_400_000;

let t: TestKernel;
let company: any;
let other: any;
let otherKey: string;
let ownKey: string;

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - n * DAY_MS + 12 * 3_600_000);
const ROUTES = ['heartbeat-runs/daily', 'costs/daily', 'issues/daily'] as const;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CALLER);
  await allowGatewayCaller(t.api);
  const scripts = await agentScripts();
  company = await createCompany(t.api, { name: 'Series Works' });
  other = await createCompany(t.api, { name: 'Elsewhere' });
  const api = settling(t);

  // Runs that end today: one succeeds, one fails, one is cancelled.
  const quick = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { name: 'Quick' });
  const failing = await processAgent(t.api, company.id, join(scripts, 'fail.cjs'), {}, { name: 'Failing' });
  const hanging = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), {}, { name: 'Hanging' });
  ownKey = await createAgentKey(t.api, quick.id);
  const succeeded = (await wakeOk(t.api, quick.id)).run;
  const failed = (await wakeOk(t.api, failing.id)).run;
  const cancelled = (await wakeOk(t.api, hanging.id)).run;
  await runWhen(t, cancelled.id, (run) => run.status === 'running');
  expect((await t.api.post(`/api/heartbeat-runs/${cancelled.id}/cancel`, {})).status).toBe(200);
  for (const run of [succeeded, failed, cancelled]) await runWhen(t, run.id);

  // Spend: today (reported and measured), three days ago, twenty days ago, and another company's.
  await addCost(api, company.id, { agentId: quick.id, provider: 'alpha', model: 'a', costCents: 120, occurredAt: new Date().toISOString() });
  const measured = await t.api.post(`/api/plugins/usage-caller/companies/${company.id}/call/record-usage`, {
    agentId: quick.id, runId: randomUUID(), issueId: null, projectId: null, provider: 'alpha', model: 'a', biller: 'alpha', billingType: 'metered_api',
    inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, costCents: 305, occurredAt: new Date().toISOString(), source: 'gateway',
  }, { headers: { 'idempotency-key': randomUUID() } });
  expect(measured.status, measured.text).toBe(200);
  await addCost(api, company.id, { agentId: quick.id, provider: 'alpha', model: 'a', costCents: 40, occurredAt: daysAgo(3).toISOString() });
  await addCost(api, company.id, { agentId: quick.id, provider: 'alpha', model: 'a', costCents: 7, occurredAt: daysAgo(20).toISOString() });
  const stranger = await createAgent(t.api, other.id, { name: 'Stranger' });
  otherKey = await createAgentKey(t.api, stranger.id);
  await addCost(api, other.id, { agentId: stranger.id, provider: 'alpha', model: 'a', costCents: 999, occurredAt: new Date().toISOString() });

  // Issues: three today, one of them done and one blocked; one in the other company.
  const created = [];
  for (const title of ['Write', 'Ship', 'Wait']) {
    const res = await t.api.post(`/api/companies/${company.id}/issues`, { title });
    expect(res.status, res.text).toBe(201);
    created.push(res.body);
  }
  expect((await t.api.patch(`/api/issues/${created[0].id}`, { status: 'done' })).status).toBe(200);
  expect((await t.api.patch(`/api/issues/${created[2].id}`, { status: 'blocked' })).status).toBe(200);
  expect((await t.api.post(`/api/companies/${other.id}/issues`, { title: 'Not ours' })).status).toBe(201);
}, 180_000);
afterAll(async () => { await t?.stop(); });

describe('per-day series', () => {
  it('runs: the runs that ended today by outcome, the success rate without the cancelled run, and zeros on the other days', async () => {
    const res = await t.api.get(`/api/companies/${company.id}/heartbeat-runs/daily`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.days).toBe(14);
    expect(res.body.series).toHaveLength(14);
    expect(res.body.series.at(-1)).toEqual({ date: today(), succeeded: 1, failed: 1, cancelled: 1, timedOut: 0, lost: 0, total: 3, successRate: 0.5 });
    expect(res.body.series.slice(0, -1).every((day: any) => day.total === 0 && day.successRate === null)).toBe(true);
    expect(res.body.totals).toEqual({ succeeded: 1, failed: 1, cancelled: 1, timedOut: 0, lost: 0, total: 3, successRate: 0.5 });
    expect(Date.parse(res.body.to) - Date.parse(res.body.from)).toBe(14 * DAY_MS);
    const other_ = await t.api.get(`/api/companies/${other.id}/heartbeat-runs/daily?days=1`);
    expect(other_.body.series).toEqual([{ date: today(), succeeded: 0, failed: 0, cancelled: 0, timedOut: 0, lost: 0, total: 0, successRate: null }]);
  });

  it("spend: each day's spend with measured (gateway) and reported apart; only the days asked for, only the company's", async () => {
    const res = await t.api.get(`/api/companies/${company.id}/costs/daily`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.series).toHaveLength(14);
    expect(res.body.series.at(-1)).toEqual({ date: today(), spendCents: 425, measuredCents: 305, reportedCents: 120, eventCount: 2, bySource: { gateway: 305, self_reported: 120 } });
    expect(res.body.series.at(-4)).toMatchObject({ date: daysAgo(3).toISOString().slice(0, 10), spendCents: 40, measuredCents: 0, reportedCents: 40 });
    expect(res.body.totalCents).toBe(465);
    const month = await t.api.get(`/api/companies/${company.id}/costs/daily?days=30`);
    expect(month.body.series).toHaveLength(30);
    expect(month.body.totalCents).toBe(472);
    expect(month.body.series.at(-21)).toMatchObject({ date: daysAgo(20).toISOString().slice(0, 10), spendCents: 7 });
  });

  it('issues: by status now, open ones, and per day the created ones by status now and the completed ones', async () => {
    const res = await t.api.get(`/api/companies/${company.id}/issues/daily?days=7`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.byStatus).toEqual({ backlog: 1, todo: 0, in_progress: 0, in_review: 0, blocked: 1, done: 1, cancelled: 0 });
    expect(res.body.open).toBe(2);
    expect(res.body.series).toHaveLength(7);
    expect(res.body.series.at(-1)).toEqual({ date: today(), created: 3, completed: 1, byStatus: { backlog: 1, todo: 0, in_progress: 0, in_review: 0, blocked: 1, done: 1, cancelled: 0 } });
  });

  it("an agent of the company reads them (the CLI's agent persona)", async () => {
    for (const route of ROUTES) {
      const res = await t.api.request('GET', `/api/companies/${company.id}/${route}`, { token: ownKey });
      expect({ route, status: res.status }).toEqual({ route, status: 200 });
    }
  });
});

describe('per-day series refuse', () => {
  it.each(['0', '91', '2.5', 'many'])('days=%s with 400, the JSON error body and the request id', async (days) => {
    for (const route of ROUTES) {
      const res = await t.api.get(`/api/companies/${company.id}/${route}?days=${days}`);
      expect({ route, status: res.status, code: res.body?.code }).toEqual({ route, status: 400, code: 'validation_failed' });
      expect(typeof res.body.error).toBe('string');
      expect(res.requestId).toEqual(expect.any(String));
    }
  });

  it('a parameter they do not know with 400', async () => {
    for (const route of ROUTES) {
      const res = await t.api.get(`/api/companies/${company.id}/${route}?from=2025-01-01`);
      expect({ route, status: res.status, code: res.body?.code }).toEqual({ route, status: 400, code: 'validation_failed' });
    }
  });

  it("another company's agent with 403, telling nothing of the company", async () => {
    for (const route of ROUTES) {
      const res = await t.api.request('GET', `/api/companies/${company.id}/${route}`, { token: otherKey });
      expect({ route, status: res.status }).toEqual({ route, status: 403 });
      expect(JSON.stringify(res.body)).not.toContain('series');
    }
  });

  it('a company that does not exist with 404', async () => {
    for (const route of ROUTES) {
      const res = await t.api.get(`/api/companies/${randomUUID()}/${route}`);
      expect({ route, status: res.status }).toEqual({ route, status: 404 });
    }
  });
});

describe('keel dashboard', () => {
  it('prints the company at a glance from the same routes, and with --json their answers', async () => {
    const human = await runCli(['dashboard', '-C', company.id, '--days', '3', '--api-base', t.url]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('Series Works (active)');
    expect(human.stdout).toContain('Issues: 2 open, 1 blocked');
    expect(human.stdout).toContain(`  ${today()}     3   1       1      50%     $4.25        3`);
    expect(human.stdout).toContain('success rate over the days: 50%');
    const json = await runCli(['dashboard', '-C', company.id, '--json', '--api-base', t.url]);
    expect(json.code, json.stderr).toBe(0);
    const data = JSON.parse(json.stdout);
    expect(data.runs).toEqual((await t.api.get(`/api/companies/${company.id}/heartbeat-runs/daily`)).body);
    expect(data.spend).toEqual((await t.api.get(`/api/companies/${company.id}/costs/daily`)).body);
    expect(data.issues).toEqual((await t.api.get(`/api/companies/${company.id}/issues/daily`)).body);
    expect(data.monthSpend).toMatchObject({ measuredCents: 305 });
    expect(data.pendingApprovals).toEqual([]);
  }, 60_000);

  it('refuses --days out of range before asking the server', async () => {
    const refused = await runCli(['dashboard', '-C', company.id, '--days', '0', '--json', '--api-base', t.url]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout || refused.stderr)).toMatchObject({ code: 'usage' });
  });
});
