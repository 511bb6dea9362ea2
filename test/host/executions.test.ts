import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { alive, processesOfRun } from '../support/processes.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The executor tier through a test plugin (fixtures/exec-fx): real agent processes (a small
 * Node script), real HTTP exchanges against a local server, and the kernel's refusals.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/exec-fx', import.meta.url));
const KEY = 'exec-fx';
const SERVER_SECRET = 'KEEL_EXEC_TEST_SERVER_SECRET';
let t: TestKernel;
let companyId: string;
let script: string;
let local: Server;
let localUrl: string;

const remoteCalls: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = [];
/** The authorization header of each JSON exchange the local server answered. */
const authorizations: Array<string | null> = [];
/** A run server under /remote: a create, a stream cut after its first event, then a stream from Last-Event-ID to the end. */
function remoteAnswer(url: string, res: ServerResponse): void {
  if (url === '/remote/v1/runs') { res.writeHead(201, { 'content-type': 'application/json' }); res.end('{"id":"r 1"}'); return; }
  if (url === '/remote/v1/runs/r%201/events') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const opens = remoteCalls.filter((call) => call.url === url).length;
    if (opens === 1) { res.write('id: 1\nevent: run.text\ndata: {"delta":"a"}\n\n'); setTimeout(() => res.socket?.destroy(), 50); return; }
    res.end('id: 2\nevent: run.text\ndata: {"delta":"b"}\n\nid: 3\nevent: run.completed\ndata: {"status":"succeeded","result":{"ok":true}}\n\n');
    return;
  }
  res.writeHead(404).end();
}

/** The agent: what it does is chosen by SERVICE_MODE, which the plugin adds to its environment. */
const AGENT = `
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const out = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
const mode = process.env.SERVICE_MODE;
/** Every process this agent can see, with the names in its environment and the run it belongs to, where readable. */
const snoop = () => fs.readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).map((pid) => {
  try {
    const entries = fs.readFileSync('/proc/' + pid + '/environ', 'utf8').split('\\0').filter(Boolean);
    return { pid: Number(pid), keys: entries.map((entry) => entry.split('=')[0]), runId: (entries.find((entry) => entry.startsWith('SERVICE_RUN_ID=')) || '').slice(15) || null };
  } catch (error) { return { pid: Number(pid), error: error.code }; }
});
(async () => {
  if (mode === 'env') {
    console.log('plain line, log only');
    console.error('a line on stderr');
    let me = null;
    try {
      const res = await fetch(process.env.SERVICE_API_URL + '/api/agents/me', { headers: { authorization: 'Bearer ' + process.env.SERVICE_API_KEY } });
      me = { status: res.status, body: await res.json() };
    } catch (error) { me = { error: String(error) }; }
    // The token itself is masked in everything output becomes; spelt backwards it is not (the test revokes it).
    const tokenBackwards = [...process.env.SERVICE_API_KEY].reverse().join('');
    out({ type: 'env', env: process.env, tokenBackwards, uid: process.getuid(), cwd: process.cwd(), file: fs.readFileSync('notes/a.txt', 'utf8'), me, processes: snoop() });
    out({ type: 'done', n: 2 });
    process.exit(0);
  }
  if (mode === 'fail') process.exit(3);
  if (mode === 'wait') {
    out({ type: 'child', pid: process.pid });
    setInterval(() => {}, 1000);
  }
  if (mode === 'snoop') {
    out({ type: 'snoop', processes: snoop(), pid: process.pid });
    process.exit(0);
  }
  if (mode === 'hang') {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    out({ type: 'child', pid: child.pid });
    process.on('SIGTERM', () => {});
    setInterval(() => {}, 1000);
  }
})();
`;

const received = async (executionId: string) => (await t.sql.query('select name, payload from plugin_execfx.received where execution_id = $1 order by n', [executionId])).rows as Array<{ name: string; payload: any }>;
const finished = (executionId: string) => waitFor(async () => (await received(executionId)).find((row) => row.name === 'execution.finished')?.payload, 'execution.finished');
const start = (body: Record<string, unknown>, company = companyId, api = t.api) => api.post(`/api/plugins/${KEY}/companies/${company}/start`, body);
/** Waits for the agent's child to be reported, then finds the run's processes on the host: unshare, the namespace's shell, the agent and its child. */
async function runProcesses(executionId: string, runId: string): Promise<number[]> {
  await waitFor(async () => (await received(executionId)).find((row) => row.name === 'execution.output')?.payload.outputs[0].data.pid as number, 'the child pid');
  const found = processesOfRun(runId);
  expect(found.length).toBeGreaterThanOrEqual(2);
  return found;
}

async function processAgent(config: Record<string, unknown> = {}, company = companyId): Promise<any> {
  return createAgent(t.api, company, { adapterType: 'process', adapterConfig: { command: process.execPath, args: [script], ...config } });
}

beforeAll(async () => {
  process.env[SERVER_SECRET] = 'the server environment must not reach agents';
  const dir = await mkdtemp(join(tmpdir(), 'keel-agent-script-'));
  await chmod(dir, 0o755);
  script = join(dir, 'agent.cjs');
  await writeFile(script, AGENT, { mode: 0o644 });
  local = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      if (req.url?.startsWith('/agent/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: progress\ndata: {"type":"step","n":1}\n\n');
        res.write(': a comment\n\ndata: plain text\n\n');
        res.end('event: done\ndata: {"ok":true}\n\n');
        return;
      }
      if (req.url?.startsWith('/agent/slow')) return; // never answers
      if (req.url?.startsWith('/remote/')) { remoteCalls.push({ method: req.method!, url: req.url, headers: req.headers }); return remoteAnswer(req.url, res); }
      authorizations.push(req.headers.authorization ?? null);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ got: JSON.parse(body || 'null'), authorization: req.headers.authorization ?? null, usage: { costCents: 1 } }));
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', () => resolve()));
  localUrl = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
  t = await startTestKernel({ plugins: { privateNetworkHosts: [`${KEY}@127.0.0.1`] } });
  await installAndEnable(t, FIXTURE);
  companyId = (await createCompany(t.api, { name: 'Exec Co' })).id;
});
afterAll(async () => {
  delete process.env[SERVER_SECRET];
  await t?.stop();
  local?.close();
});

describe('process executions', () => {
  it('runs the configured command as the agent user, with an environment built from scratch and canonical SERVICE_* values, and reports its output', async () => {
    const agent = await processAgent({ env: { CONFIGURED: 'from config', SERVICE_RUN_ID: 'stale configured value' } });
    const res = await start({
      agentId: agent.id,
      execution: { kind: 'process', env: { SERVICE_MODE: 'env', SERVICE_API_KEY: 'forged by the plugin' }, files: [{ path: 'notes/a.txt', content: 'instructions' }] },
    });
    expect(res.status, res.text).toBe(200);
    const { runId, execution } = res.body;
    expect(execution).toMatchObject({ runId, agentId: agent.id, kind: 'process', status: 'starting', logBytes: 0, finishedAt: null });
    const end = await finished(execution.executionId);
    expect(end).toMatchObject({ executionId: execution.executionId, runId, companyId, agentId: agent.id, status: 'succeeded', exitCode: 0, signal: null, errorCode: null, response: null });
    expect(end.logBytes).toBeGreaterThan(0);

    const events = await received(execution.executionId);
    expect(events.at(-1)!.name).toBe('execution.finished');
    // Outputs come in batches (one event per log batch), in line order.
    const outputs = events.filter((row) => row.name === 'execution.output').flatMap((row) => row.payload.outputs);
    expect(outputs).toHaveLength(2);
    const [envEvent, doneEvent] = outputs;
    expect(doneEvent).toMatchObject({ stream: 'stdout', data: { type: 'done', n: 2 } });
    expect(doneEvent.seq).toBeGreaterThan(envEvent.seq);
    const seen = envEvent.data;
    expect(seen.uid).not.toBe(process.getuid!());
    expect(seen.env[SERVER_SECRET]).toBeUndefined();
    expect(Object.keys(seen.env).sort()).toEqual(['CONFIGURED', 'HOME', 'LANG', 'PATH', 'SERVICE_AGENT_ID', 'SERVICE_API_KEY', 'SERVICE_API_URL', 'SERVICE_COMPANY_ID', 'SERVICE_LLM_URL', 'SERVICE_MODE', 'SERVICE_RUN_ID', 'TMPDIR']);
    expect(seen.env).toMatchObject({ CONFIGURED: 'from config', SERVICE_RUN_ID: runId, SERVICE_AGENT_ID: agent.id, SERVICE_COMPANY_ID: companyId, SERVICE_API_URL: t.url, SERVICE_LLM_URL: `${t.url}/api/llm` });
    // The run token is masked in the run's output (credentials Keel handed the run never are stored).
    expect(seen.env.SERVICE_API_KEY).toBe('***');
    const token = [...seen.tokenBackwards].reverse().join('');
    expect(token).toMatch(/^ey/);
    // The run token works while the run is live: the agent reached the API as itself.
    expect(seen.me).toMatchObject({ status: 200, body: { id: agent.id } });
    expect(seen.file).toBe('instructions');
    expect(seen.cwd).toBe(seen.env.HOME);
    // The agent sees only its own processes (its PID namespace): not the server, whose
    // environment holds the secret, and nothing of any other run.
    expect(seen.processes.length).toBeGreaterThan(0);
    expect(seen.processes.length).toBeLessThanOrEqual(3);
    for (const seenProcess of seen.processes) {
      expect(seenProcess.keys ?? []).not.toContain(SERVER_SECRET);
      expect([runId, undefined]).toContain(seenProcess.runId ?? undefined);
    }

    const summary = await t.api.get(`/api/plugins/${KEY}/companies/${companyId}/executions/${execution.executionId}`);
    expect(summary.body).toMatchObject({ status: 'succeeded', exitCode: 0, logBytes: end.logBytes, logSha256: expect.stringMatching(/^[0-9a-f]{64}$/), pid: expect.any(Number), startedAt: expect.any(String), finishedAt: expect.any(String) });
    const run = (await t.sql.query('select status, close_reason from runs where id = $1', [runId])).rows[0];
    expect(run.status).toBe('succeeded');
    // Closing the run revoked its token.
    const after = await t.api.get('/api/agents/me', { token });
    expect(after.status).toBe(401);
  });

  it('serves the NDJSON log by byte offset', async () => {
    const agent = await processAgent();
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'env' }, files: [{ path: 'notes/a.txt', content: 'x' }] } });
    const id = res.body.execution.executionId;
    const end = await finished(id);
    const base = `/api/plugins/${KEY}/companies/${companyId}/executions/${id}/log`;
    const whole = await t.api.get(base);
    expect(whole.status, whole.text).toBe(200);
    expect(whole.body).toMatchObject({ offset: 0, nextOffset: end.logBytes, eof: true });
    const records = whole.body.content.trim().split('\n').map((line: string) => JSON.parse(line));
    expect(records.map((r: any) => r.seq)).toEqual(records.map((_: unknown, i: number) => i + 1));
    expect(records.find((r: any) => r.stream === 'stderr')).toMatchObject({ line: 'a line on stderr', at: expect.any(String) });
    expect(records.find((r: any) => r.line === 'plain line, log only')).toMatchObject({ stream: 'stdout' });
    expect(records.at(-1)).toMatchObject({ stream: 'system', line: 'exited with code 0' });
    const first = await t.api.get(`${base}?offset=0&limitBytes=40`);
    expect(first.body).toMatchObject({ offset: 0, nextOffset: 40, eof: false });
    const rest = await t.api.get(`${base}?offset=40`);
    expect(first.body.content + rest.body.content).toBe(whole.body.content);
    expect(rest.body.eof).toBe(true);
  });

  it('ends a non-zero exit failed and a process past timeoutSec timed_out, killing its process group', async () => {
    const failing = await processAgent();
    const failed = await start({ agentId: failing.id, execution: { kind: 'process', env: { SERVICE_MODE: 'fail' } } });
    expect(await finished(failed.body.execution.executionId)).toMatchObject({ status: 'failed', exitCode: 3 });
    expect((await t.sql.query('select status from runs where id = $1', [failed.body.runId])).rows[0].status).toBe('failed');

    const slow = await processAgent({ timeoutSec: 1, graceSec: 1 });
    const res = await start({ agentId: slow.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } });
    const id = res.body.execution.executionId;
    const group = await runProcesses(id, res.body.runId);
    const end = await finished(id);
    // It ignores SIGTERM: the group was killed after graceSec.
    expect(end).toMatchObject({ status: 'timed_out', errorCode: 'timeout', signal: 'SIGKILL' });
    expect(group.filter(alive)).toEqual([]);
    expect((await t.sql.query('select status from runs where id = $1', [res.body.runId])).rows[0].status).toBe('timed_out');
  });

  it('a run cannot see another concurrent run\'s processes, so not its environment or token (a PID namespace each)', async () => {
    const agent = await processAgent({ graceSec: 0 });
    const hanging = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } });
    const id = hanging.body.execution.executionId;
    const group = await runProcesses(id, hanging.body.runId);
    // unshare, the namespace's shell, the agent and its child, all named by the run on the host.
    expect(group.length).toBe(4);

    const snooper = await processAgent();
    const snoop = await start({ agentId: snooper.id, execution: { kind: 'process', env: { SERVICE_MODE: 'snoop' } } });
    expect(snoop.status, snoop.text).toBe(200);
    expect(await finished(snoop.body.execution.executionId)).toMatchObject({ status: 'succeeded' });
    const report = (await received(snoop.body.execution.executionId)).filter((row) => row.name === 'execution.output').flatMap((row) => row.payload.outputs)[0].data;
    // Its own shell (pid 1) and itself; the other run's four processes are not there at all.
    expect(report.pid).toBe(2);
    expect(report.processes.map((seen: any) => seen.pid).sort()).toEqual([1, 2]);
    expect(report.processes.map((seen: any) => seen.runId)).toEqual([snoop.body.runId, snoop.body.runId]);

    await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/cancel`, { reason: 'test' });
    expect(await finished(id)).toMatchObject({ status: 'cancelled' });
    expect(group.filter(alive)).toEqual([]);
  });

  it('cancels: SIGTERM to the group, SIGKILL after graceSec; the agent\'s child dies too; idempotent', async () => {
    const agent = await processAgent({ graceSec: 1 });
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } });
    const id = res.body.execution.executionId;
    const group = await runProcesses(id, res.body.runId);
    const pid = (await t.sql.query('select pid from executions where id = $1', [id])).rows[0].pid;
    const cancel = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/cancel`, { reason: 'test' });
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body.executionId).toBe(id);
    const end = await finished(id);
    expect(end).toMatchObject({ status: 'cancelled', errorCode: 'cancelled' });
    expect(alive(pid)).toBe(false);
    expect(group.filter(alive)).toEqual([]);
    const again = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/cancel`, {});
    expect(again.body).toMatchObject({ status: 'cancelled' });
    expect((await t.sql.query('select status from runs where id = $1', [res.body.runId])).rows[0].status).toBe('cancelled');
  });

  it('reports an agent that SIGTERM ended as ended by SIGTERM, not by the exit status of the namespace\'s shell', async () => {
    const agent = await processAgent({ graceSec: 30 });
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'wait' } } });
    const id = res.body.execution.executionId;
    const group = await runProcesses(id, res.body.runId);
    await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/cancel`, { reason: 'test' });
    expect(await finished(id)).toMatchObject({ status: 'cancelled', signal: 'SIGTERM', exitCode: null });
    expect(group.filter(alive)).toEqual([]);
  });

  it('pausing the agent (kernel route) marks its executions for cancel in the same transaction and the process is killed', async () => {
    const agent = await processAgent({ graceSec: 0 });
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } });
    const id = res.body.execution.executionId;
    const group = await runProcesses(id, res.body.runId);
    const paused = await t.api.post(`/api/agents/${agent.id}/pause`, { reason: 'stop it' });
    expect(paused.status, paused.text).toBe(200);
    // Marked by the time the pause answered.
    const marked = (await t.sql.query('select cancel_requested_at, cancel_reason from executions where id = $1', [id])).rows[0];
    expect(marked.cancel_requested_at).not.toBeNull();
    expect(marked.cancel_reason).toBe('agent_paused');
    expect(await finished(id)).toMatchObject({ status: 'cancelled', errorCode: 'agent_paused' });
    expect(group.filter(alive)).toEqual([]);
    // And a paused agent is not started.
    const refused = await start({ agentId: agent.id, execution: { kind: 'process' } });
    expect(refused.status).toBe(409);
  });

  it('archiving the company cancels the executions of its agents in the same transaction', async () => {
    const archivedCompany = (await createCompany(t.api, { name: 'Archived Exec Co' })).id;
    const agent = await processAgent({ graceSec: 0 }, archivedCompany);
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } }, archivedCompany);
    expect(res.status, res.text).toBe(200);
    const id = res.body.execution.executionId;
    await waitFor(async () => (await received(id)).find((row) => row.name === 'execution.output'), 'the agent to run');
    const archived = await t.api.post(`/api/companies/${archivedCompany}/archive`, {});
    expect(archived.status, archived.text).toBe(200);
    const marked = (await t.sql.query('select cancel_requested_at, cancel_reason from executions where id = $1', [id])).rows[0];
    expect(marked.cancel_requested_at).not.toBeNull();
    expect(['company_archived', 'agent_paused']).toContain(marked.cancel_reason);
    expect(await finished(id)).toMatchObject({ status: 'cancelled' });
    const refused = await start({ agentId: agent.id, execution: { kind: 'process' } }, archivedCompany);
    expect(refused.status).toBe(409);
  });

  it('closing the run elsewhere (the ledger) cancels its execution', async () => {
    const agent = await processAgent({ graceSec: 0 });
    const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'hang' } } });
    const id = res.body.execution.executionId;
    await waitFor(async () => (await received(id)).find((row) => row.name === 'execution.output'), 'the agent to run');
    await t.kernel.services.db.transaction((tx) => t.kernel.services.runs.close(tx, res.body.runId, { status: 'cancelled', reason: 'closed by its plugin' }));
    expect(await finished(id)).toMatchObject({ status: 'cancelled', errorCode: 'run_closed' });
    expect((await t.sql.query('select status, close_reason from runs where id = $1', [res.body.runId])).rows[0]).toEqual({ status: 'cancelled', close_reason: 'closed by its plugin' });
  });

  it('a start racing with an open transaction that closes its run waits for it, and starts nothing for the closed run', async () => {
    const agent = await processAgent({ graceSec: 0 });
    const { rows: [run] } = await t.sql.query(`insert into runs (company_id, agent_id, status) values ($1, $2, 'queued') returning id`, [companyId, agent.id]);
    // The ledger closes the run in a transaction that stays open while the start runs: its status
    // trigger finds no execution to cancel, so the start itself must see the close.
    let closedInTransaction!: () => void;
    let release!: () => void;
    const closed = new Promise<void>((resolve) => { closedInTransaction = resolve; });
    const released = new Promise<void>((resolve) => { release = resolve; });
    const closing = t.kernel.services.db.transaction(async (tx) => {
      await t.kernel.services.runs.close(tx, run.id, { status: 'cancelled', reason: 'closed during the start' });
      closedInTransaction();
      await released;
    });
    await closed;
    let settled = false;
    const pending = start({ execution: { kind: 'process', runId: run.id, env: { SERVICE_MODE: 'hang' } } }).finally(() => { settled = true; });
    await waitFor(async () => settled || (await t.sql.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'select status from runs where id = % for share'`)).rowCount, 'the start to answer or to wait for the close');
    release();
    await closing;
    const res = await pending;
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('run_closed');
    expect((await t.sql.query('select count(*)::int as n from executions where run_id = $1', [run.id])).rows[0].n).toBe(0);
    expect(processesOfRun(run.id)).toEqual([]);
  });

  it('answers a repeated start with the run\'s execution, and refuses a closed run, a configuration no board actor wrote and the wrong kind, leaving no run open', async () => {
    const agent = await processAgent();
    const first = await start({ agentId: agent.id, execution: { kind: 'process', env: { SERVICE_MODE: 'fail' } } });
    await finished(first.body.execution.executionId);
    // A repeated start of a run answers the execution it started (ended here), and starts nothing.
    const again = await start({ execution: { kind: 'process', runId: first.body.runId } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.execution).toMatchObject({ executionId: first.body.execution.executionId, status: 'failed' });
    expect((await t.sql.query('select count(*)::int as n from executions where run_id = $1', [first.body.runId])).rows[0].n).toBe(1);

    const other = await processAgent();
    const written = await t.sql.query('select created_by_user_id from agent_config_revisions where agent_id = $1', [other.id]);
    expect(written.rows[0].created_by_user_id).not.toBeNull();
    // An agent rewrote the adapter configuration: nothing runs until the board writes or approves it.
    await t.sql.query(
      `insert into agent_config_revisions (company_id, agent_id, revision_number, source, snapshot, changed_keys, created_by_agent_id)
       values ($1, $2, 2, 'patch', '{}'::jsonb, array['adapterConfig'], $2)`, [companyId, other.id]);
    const unapproved = await start({ agentId: other.id, execution: { kind: 'process' } });
    expect(unapproved.status).toBe(409);
    expect(unapproved.body.code).toBe('adapter_config_unapproved');
    // A later revision that only records instructions (even a board user's) approves nothing.
    await t.sql.query(
      `insert into agent_config_revisions (company_id, agent_id, revision_number, source, snapshot, changed_keys, created_by_user_id)
       values ($1, $2, 3, 'instructions', '{}'::jsonb, array['adapterConfig'], 'local-board')`, [companyId, other.id]);
    expect((await start({ agentId: other.id, execution: { kind: 'process' } })).body.code).toBe('adapter_config_unapproved');

    const httpAgent = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const mismatch = await start({ agentId: httpAgent.id, execution: { kind: 'process' } });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe('adapter_mismatch');
    expect((await t.sql.query('select count(*)::int as n from executions where agent_id = any($1)', [[other.id, httpAgent.id]])).rows[0].n).toBe(0);
    // Each refused start opened a run in a call that then failed: none of them stays open.
    const { rows: runs } = await t.sql.query('select status, close_reason from runs where agent_id = any($1) order by created_at', [[other.id, httpAgent.id]]);
    expect(runs).toEqual(Array.from({ length: 3 }, () => ({ status: 'failed', close_reason: 'opening_call_failed' })));
    // A closed run without an execution cannot be started.
    const { rows: [closedRun] } = await t.sql.query('select id from runs where agent_id = $1 limit 1', [httpAgent.id]);
    const closed = await start({ execution: { kind: 'process', runId: closedRun.id } });
    expect(closed.status).toBe(409);
    expect(closed.body.code).toBe('run_closed');
  });
});

describe('attacks', () => {
  it('refuses a plugin without the executions grant', async () => {
    const variant = await pluginVariant(FIXTURE, (manifest) => {
      manifest.key = 'exec-nogrant';
      manifest.database.namespace = 'execnogrant';
      manifest.capabilities = manifest.capabilities.filter((capability: { id: string }) => capability.id !== 'executions');
    });
    await installAndEnable(t, variant);
    const agent = await processAgent();
    const res = await t.api.post(`/api/plugins/exec-nogrant/companies/${companyId}/start`, { agentId: agent.id, execution: { kind: 'process' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.denied).toMatchObject({ status: 403, code: 'capability_denied' });
    expect(res.body.denied.message).toContain('ctx.executions.start needs executions');
    expect((await t.sql.query('select count(*)::int as n from executions where agent_id = $1', [agent.id])).rows[0].n).toBe(0);
  });

  it('takes the command from the agent configuration only: a command, args or loader variables from the plugin are refused', async () => {
    const agent = await processAgent();
    const command = await start({ agentId: agent.id, execution: { kind: 'process', command: '/bin/sh', args: ['-c', 'id'] } });
    expect(command.status).toBe(400);
    expect(command.body.code).toBe('invalid_arguments');
    for (const name of ['PATH', 'LD_PRELOAD', 'NODE_OPTIONS']) {
      const res = await start({ agentId: agent.id, execution: { kind: 'process', env: { [name]: '--require /tmp/evil.js' } } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_arguments');
    }
    const escape = await start({ agentId: agent.id, execution: { kind: 'process', files: [{ path: '../../etc/passwd', content: 'x' }] } });
    expect(escape.status).toBe(400);
    const absolute = await start({ agentId: agent.id, execution: { kind: 'process', files: [{ path: '/tmp/x', content: 'x' }] } });
    expect(absolute.status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from executions where agent_id = $1', [agent.id])).rows[0].n).toBe(0);
  });

  it("refuses another company's run and another company's execution alike, as not found", async () => {
    const otherCompany = (await createCompany(t.api, { name: 'Other Exec Co' })).id;
    const theirs = await processAgent({}, otherCompany);
    const opened = await start({ agentId: theirs.id, execution: { kind: 'process', env: { SERVICE_MODE: 'fail' } } }, otherCompany);
    expect(opened.status, opened.text).toBe(200);
    const res = await start({ execution: { kind: 'process', runId: opened.body.runId } });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('run_not_found');
    const read = await t.api.get(`/api/plugins/${KEY}/companies/${companyId}/executions/${opened.body.execution.executionId}`);
    expect(read.status).toBe(404);
    expect(read.body.code).toBe('execution_not_found');
    const cancel = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${opened.body.execution.executionId}/cancel`, {});
    expect(cancel.status).toBe(404);
  });

  it("reads several executions at once: the plugin's own of the call's company, another company's and unknown ones left out", async () => {
    const otherCompany = (await createCompany(t.api, { name: 'Other Read Co' })).id;
    const theirs = await start({ agentId: (await processAgent({}, otherCompany)).id, execution: { kind: 'process', env: { SERVICE_MODE: 'fail' } } }, otherCompany);
    const mine = await start({ agentId: (await processAgent({})).id, execution: { kind: 'process', env: { SERVICE_MODE: 'fail' } } });
    expect(mine.status, mine.text).toBe(200);
    const ids = [mine.body.execution.executionId, theirs.body.execution.executionId, randomUUID()];
    const read = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions-read`, { ids });
    expect(read.status, read.text).toBe(200);
    expect(read.body.map((execution: any) => execution.executionId)).toEqual([mine.body.execution.executionId]);
    expect(read.body[0]).toMatchObject({ runId: mine.body.runId, kind: 'process' });
    const malformed = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions-read`, { ids: ['not-a-uuid'] });
    expect(malformed.status).toBe(400);
  });
});

describe('http executions', () => {
  it('sends one request to the configured URL with the run token in a header, and ends with its JSON answer', async () => {
    const agent = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const res = await start({ agentId: agent.id, execution: { kind: 'http', url: `${localUrl}/agent/run`, body: { wake: 'now' }, headers: { 'x-extra': '1', authorization: 'forged' } } });
    expect(res.status, res.text).toBe(200);
    const end = await finished(res.body.execution.executionId);
    expect(end).toMatchObject({ status: 'succeeded', httpStatus: 200, response: { got: { wake: 'now' }, usage: { costCents: 1 } } });
    // The server got the run token; its echo of it is masked in the stored answer.
    expect(authorizations.at(-1)).toMatch(/^Bearer ey/);
    expect(end.response.authorization).toBe('Bearer ***');
    expect((await t.sql.query('select status from runs where id = $1', [res.body.runId])).rows[0].status).toBe('succeeded');
  });

  it('reads a Server-Sent Events answer as outputs, in order', async () => {
    const agent = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const res = await start({ agentId: agent.id, execution: { kind: 'http', url: `${localUrl}/agent/stream`, stream: 'sse' } });
    expect(res.status, res.text).toBe(200);
    const id = res.body.execution.executionId;
    expect(await finished(id)).toMatchObject({ status: 'succeeded', httpStatus: 200, response: null });
    const outputs = (await received(id)).filter((row) => row.name === 'execution.output').flatMap((row) => row.payload.outputs);
    expect(outputs.map((o) => ({ stream: o.stream, data: o.data }))).toEqual([
      { stream: 'sse', data: { event: 'progress', data: { type: 'step', n: 1 } } },
      { stream: 'sse', data: { event: 'message', data: 'plain text' } },
      { stream: 'sse', data: { event: 'done', data: { ok: true } } },
    ]);
  });

  it('times out an answer past timeoutMs, and cancels by aborting', async () => {
    const agent = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const slow = await start({ agentId: agent.id, execution: { kind: 'http', url: `${localUrl}/agent/slow`, timeoutMs: 300 } });
    expect(await finished(slow.body.execution.executionId)).toMatchObject({ status: 'timed_out', httpStatus: null });
    const other = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const held = await start({ agentId: other.id, execution: { kind: 'http', url: `${localUrl}/agent/slow` } });
    const id = held.body.execution.executionId;
    await waitFor(async () => (await t.sql.query("select 1 from executions where id = $1 and status = 'running'", [id])).rowCount, 'running');
    await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/cancel`, {});
    expect(await finished(id)).toMatchObject({ status: 'cancelled' });
  });

  it('refuses a URL outside the configured one, and loopback the operator did not allow (SSRF)', async () => {
    const agent = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: `${localUrl}/agent` } });
    const outside = await start({ agentId: agent.id, execution: { kind: 'http', url: `${localUrl}/admin` } });
    expect(outside.status).toBe(403);
    expect(outside.body.code).toBe('execution_url_denied');
    const sibling = await start({ agentId: agent.id, execution: { kind: 'http', url: `${localUrl}/agentx` } });
    expect(sibling.status).toBe(403);
    // The operator allowed 127.0.0.1 for this plugin, not localhost (nor any other loopback spelling).
    const port = (local.address() as AddressInfo).port;
    for (const url of [`http://localhost:${port}/agent`, `http://127.1:${port}/agent`, `http://[::1]:${port}/agent`]) {
      const loopback = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url } });
      const res = await start({ agentId: loopback.id, execution: { kind: 'http', url } });
      if (url.includes('127.1')) {
        // 127.1 is 127.0.0.1 spelled short: the same allowed host.
        expect(res.status, url).toBe(200);
        await finished(res.body.execution.executionId);
        continue;
      }
      expect(res.status, url).toBe(403);
      expect(res.body.code).toBe('address_denied');
    }
    const metadata = await createAgent(t.api, companyId, { adapterType: 'http', adapterConfig: { url: 'http://169.254.169.254/latest' } });
    const res = await start({ agentId: metadata.id, execution: { kind: 'http', url: 'http://169.254.169.254/latest' } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('address_denied');
  });
});

describe('remote runs (http with remoteRun)', () => {
  const follow = (base: string) => ({ eventsUrl: `${base}/v1/runs/{id}/events`, statusUrl: `${base}/v1/runs/{id}`, stopUrl: `${base}/v1/runs/{id}/stop`, reconnectMs: 20, terminalEvents: ['run.completed'] });

  it('creates the run, follows its stream across a cut with Last-Event-ID, and ends with the terminal event; the configured secret goes in a header the plugin never sees', async () => {
    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'runner-key', value: 'runner-secret-value-42' });
    const base = `${localUrl}/remote`;
    const agent = await createAgent(t.api, companyId, { adapterType: 'custom_remote', adapterConfig: { apiBaseUrl: base, key: { type: 'secret_ref', secretId: secret.body.id } } });
    const res = await start({ agentId: agent.id, execution: {
      kind: 'http', url: `${base}/v1/runs`, baseUrlKey: 'apiBaseUrl', headers: { 'idempotency-key': 'k-1', authorization: 'forged' },
      secretHeaders: [{ header: 'authorization', configKey: 'key', scheme: 'Bearer' }], tokenHeader: 'x-run-token', notes: ['a note'], remoteRun: follow(base),
    } });
    expect(res.status, res.text).toBe(200);
    const id = res.body.execution.executionId;
    expect(await finished(id)).toMatchObject({ status: 'succeeded', response: { status: 'succeeded', result: { ok: true } } });
    const calls = remoteCalls.filter((call) => call.url.startsWith('/remote/v1/runs'));
    expect(calls.map((call) => [call.method, call.url, call.headers['last-event-id'] ?? null])).toEqual([
      ['POST', '/remote/v1/runs', null], ['GET', '/remote/v1/runs/r%201/events', null], ['GET', '/remote/v1/runs/r%201/events', '1'],
    ]);
    for (const call of calls) expect(call.headers.authorization).toBe('Bearer runner-secret-value-42');
    expect(calls[0]!.headers['idempotency-key']).toBe('k-1');
    expect(calls[0]!.headers['x-run-token']).toMatch(/^ey/);
    const outputs = (await received(id)).filter((row) => row.name === 'execution.output').flatMap((row) => row.payload.outputs.map((o: any) => o.data));
    expect(outputs).toEqual([
      { event: 'run.text', data: { delta: 'a' } }, { event: 'run.text', data: { delta: 'b' } },
      { event: 'run.completed', data: { status: 'succeeded', result: { ok: true } } },
    ]);
    const log = await t.api.get(`/api/plugins/${KEY}/companies/${companyId}/executions/${id}/log`);
    expect(log.body.content).toContain('warning: a note');
    expect(JSON.stringify(await received(id)) + log.body.content).not.toContain('runner-secret-value-42');
    const audit = await t.sql.query(`select details from security_audit_log where run_id = $1`, [res.body.runId]);
    expect(audit.rows[0].details.headers).toEqual([{ header: 'authorization', configKey: 'key', secretId: secret.body.id, version: 1 }]);
  });

  it('refuses follow-up URLs outside the configured base, a missing base field and a process agent', async () => {
    const base = `${localUrl}/remote`;
    const agent = await createAgent(t.api, companyId, { adapterType: 'custom_remote', adapterConfig: { apiBaseUrl: base } });
    const outside = await start({ agentId: agent.id, execution: { kind: 'http', url: `${base}/v1/runs`, baseUrlKey: 'apiBaseUrl', remoteRun: { ...follow(base), stopUrl: `${localUrl}/admin/{id}` } } });
    expect([outside.status, outside.body.code]).toEqual([403, 'execution_url_denied']);
    const noBase = await start({ agentId: agent.id, execution: { kind: 'http', url: `${base}/v1/runs` } });
    expect([noBase.status, noBase.body.code]).toEqual([409, 'adapter_config_invalid']);
    const noSecret = await start({ agentId: agent.id, execution: { kind: 'http', url: `${base}/v1/runs`, baseUrlKey: 'apiBaseUrl', secretHeaders: [{ header: 'authorization', configKey: 'key' }] } });
    expect([noSecret.status, noSecret.body.code]).toEqual([409, 'adapter_config_invalid']);
    const processOne = await processAgent();
    const mismatch = await start({ agentId: processOne.id, execution: { kind: 'http', url: `${base}/v1/runs` } });
    expect([mismatch.status, mismatch.body.code]).toEqual([409, 'adapter_mismatch']);
  });
});
