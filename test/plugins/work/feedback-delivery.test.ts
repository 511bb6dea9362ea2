import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createIssue, inRun } from './artifact-helpers.ts';

/**
 * Delivery of shareable feedback traces: the `deliver-feedback` job sends the pending traces of
 * companies that consent to the endpoint the instance settings name, through ctx.http.fetch,
 * each exactly once, also with two Keel processes on one database. A real HTTP server on
 * loopback receives them; the operator opens its host to the work plugin.
 */
interface Received { traceId: string; idempotencyKey: string | undefined; headers: IncomingHttpHeaders; body: any }
const received: Received[] = [];
let answer = 202;
let server: Server;
let endpoint: string;
let t: TestKernel;
let second: PeerKernel;

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => { text += chunk; });
    req.on('end', () => {
      const body = JSON.parse(text);
      received.push({ traceId: body.trace.id, idempotencyKey: req.headers['idempotency-key'] as string | undefined, headers: req.headers, body });
      res.writeHead(answer, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  endpoint = `http://127.0.0.1:${port}/traces`;
  const operator = { plugins: { networkHosts: [`work@127.0.0.1:${port}`], privateNetworkHosts: ['work@127.0.0.1'] } };
  t = await startTestKernel(operator, { firstPartyDir: FIRST_PARTY_PLUGINS });
  second = await startPeerKernel(t, operator, { firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await second?.stop();
  await t?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

/** Runs the job now (in every company) through `kernel`'s own process and waits for the run to end. */
async function deliver(kernel: { api: Api } = t) {
  const deadline = Date.now() + 60_000;
  // One run of the job at a time, in any process: a scheduled run may be under way.
  let res = await kernel.api.post('/api/plugins/work/jobs/deliver-feedback/trigger', {});
  while (res.status === 409 && res.body.code === 'job_already_running' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    res = await kernel.api.post('/api/plugins/work/jobs/deliver-feedback/trigger', {});
  }
  expect(res.status, res.text).toBe(202);
  for (;;) {
    const runs = await kernel.api.get('/api/plugins/work/jobs/deliver-feedback/runs');
    const run = runs.body.find((r: { id: string }) => r.id === res.body.id);
    if (run && run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error('the job run did not finish');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A company with an agent's comment on an issue, and `count` shareable votes of the board on comments. */
async function companyWithTraces(name: string, count: number, shareable = true) {
  const company = await createCompany(t.api, { name });
  const agent = await createAgent(t.api, company.id, { name: `${name} author` });
  const issue = await createIssue(t.api, company.id, { title: `${name} work` });
  const run = await inRun(t, agent.id, company.id);
  const traces: any[] = [];
  for (let n = 0; n < count; n++) {
    const comment = await run.api.post(`/api/issues/${issue.id}/comments`, { body: `Output ${n}` });
    const vote = await t.api.post(`/api/issues/${issue.id}/feedback`, { targetType: 'comment', targetId: comment.body.id, vote: 'up', shareable });
    expect(vote.status, vote.text).toBe(201);
    traces.push(vote.body);
  }
  return { company, traces };
}

const traceRow = async (id: string) => (await t.sql.query('select status, delivery_attempts, last_delivery_error, sent_at from plugin_work.feedback_traces where id = $1', [id])).rows[0];
const consent = (companyId: string, enabled: boolean, api: Api = t.api) =>
  api.patch(`/api/companies/${companyId}`, { feedbackDataSharingEnabled: enabled, feedbackDataSharingTermsVersion: '2026-01' });
const setEndpoint = async (value: string | null) => expect((await t.api.patch('/api/instance/settings/general', { feedbackDataSharingEndpoint: value })).status).toBe(200);

describe('feedback trace delivery', () => {
  it('sends pending traces only of consenting companies to the endpoint, once, marking them sent', async () => {
    const consenting = await companyWithTraces('Consenting Co', 2);
    const silent = await companyWithTraces('Silent Co', 1);
    const local = await companyWithTraces('Local Co', 1, false);
    expect((await consent(local.company.id, true)).status).toBe(200);

    // No endpoint yet, then no consent: nothing leaves.
    await deliver();
    await setEndpoint(endpoint);
    await deliver();
    expect(received).toEqual([]);

    expect((await consent(consenting.company.id, true)).status).toBe(200);
    expect(await deliver()).toMatchObject({ status: 'succeeded' });
    const ids = consenting.traces.map((trace) => trace.id);
    expect(received.map((r) => r.traceId).sort()).toEqual([...ids].sort());
    for (const r of received) {
      expect(r.idempotencyKey).toBe(r.traceId);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.trace).toMatchObject({ companyId: consenting.company.id, vote: 'up', shareable: true, status: 'pending', payload: { body: expect.stringMatching(/^Output /) } });
      expect(r.body.trace).not.toHaveProperty('voterUserId');
    }
    for (const id of ids) expect(await traceRow(id)).toMatchObject({ status: 'sent', delivery_attempts: 1, last_delivery_error: null, sent_at: expect.any(Date) });
    const listed = await t.api.get(`/api/companies/${consenting.company.id}/feedback-traces?status=sent`);
    expect(listed.body.traces.map((trace: any) => [trace.status, trace.deliveryAttempts, trace.lastDeliveryError])).toEqual([['sent', 1, null], ['sent', 1, null]]);
    const activity = await t.sql.query("select count(*)::int as n from activity_log where action = 'feedback.trace_sent' and company_id = $1", [consenting.company.id]);
    expect(activity.rows[0].n).toBe(2);

    // Again: nothing is sent twice; the silent and the local company's traces stay where they were.
    await deliver();
    expect(received).toHaveLength(2);
    expect(await traceRow(silent.traces[0].id)).toMatchObject({ status: 'pending', delivery_attempts: 0 });
    expect(await traceRow(local.traces[0].id)).toMatchObject({ status: 'local', delivery_attempts: 0 });
    // Withdrawn consent stops delivery of new traces.
    expect((await consent(consenting.company.id, false)).status).toBe(200);
    const more = await t.api.post(`/api/issues/${consenting.traces[0].issueId}/feedback`, { targetType: 'comment', targetId: consenting.traces[0].targetId, vote: 'down', shareable: true });
    expect([more.status, more.body.status]).toEqual([200, 'pending']);
    await deliver();
    expect(received).toHaveLength(2);
    received.length = 0;
  });

  it('retries a refused delivery, then marks the trace failed with its attempts and last error', async () => {
    const { company, traces } = await companyWithTraces('Retry Co', 1);
    expect((await consent(company.id, true)).status).toBe(200);
    answer = 503;
    try {
      for (let attempt = 1; attempt <= 3; attempt++) {
        await t.sql.query('update plugin_work.feedback_traces set next_delivery_at = now() where id = $1 and status = $2', [traces[0].id, 'pending']);
        await deliver();
        expect(await traceRow(traces[0].id)).toMatchObject({
          status: attempt < 3 ? 'pending' : 'failed', delivery_attempts: attempt, last_delivery_error: 'The endpoint answered HTTP 503', sent_at: null,
        });
        // Not due again until its backoff has passed.
        if (attempt < 3) { await deliver(); expect((await traceRow(traces[0].id)).delivery_attempts).toBe(attempt); }
      }
    } finally {
      answer = 202;
    }
    expect(received.filter((r) => r.traceId === traces[0].id)).toHaveLength(3);
    await deliver();
    expect(received.filter((r) => r.traceId === traces[0].id)).toHaveLength(3);
    const failed = await t.api.get(`/api/companies/${company.id}/feedback-traces?status=failed`);
    expect(failed.body.traces.map((trace: any) => [trace.id, trace.deliveryAttempts, trace.lastDeliveryError])).toEqual([[traces[0].id, 3, 'The endpoint answered HTTP 503']]);
    received.length = 0;
  });

  it('sends each trace once when two Keel processes deliver at the same time, skipping traces another delivery holds', async () => {
    const { company, traces } = await companyWithTraces('Busy Co', 8);
    // A delivery in another process holding a trace (its claim, as a run's transaction takes it) keeps this one off it.
    const holder = await t.sql.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from plugin_work.feedback_traces where id = $1 for update', [traces[0].id]);
      expect((await consent(company.id, true)).status).toBe(200);
      await deliver(second);
      expect(received.map((r) => r.traceId).sort()).toEqual(traces.slice(1).map((trace) => trace.id).sort());
      expect((await traceRow(traces[0].id)).status).toBe('pending');
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    await Promise.all([deliver(t), deliver(second), deliver(t), deliver(second)]);
    expect(received.map((r) => r.traceId).sort()).toEqual(traces.map((trace) => trace.id).sort());
    for (const trace of traces) expect((await traceRow(trace.id)).status).toBe('sent');
    received.length = 0;
  });

  it('records a host the operator did not open as the delivery error, sending nothing', async () => {
    const { company, traces } = await companyWithTraces('Closed Co', 1);
    expect((await consent(company.id, true)).status).toBe(200);
    await setEndpoint('https://feedback.example.com/traces');
    try {
      await deliver();
      const row = await traceRow(traces[0].id);
      expect(row).toMatchObject({ status: 'pending', delivery_attempts: 1 });
      expect(row.last_delivery_error).toMatch(/^network_denied: /);
    } finally {
      await setEndpoint(endpoint);
    }
  });
});
