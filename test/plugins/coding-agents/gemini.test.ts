import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { processesOfRun } from '../../support/processes.ts';
import { waitFor } from '../../support/wait-for.ts';
import { isJsonCall, lastFunctionResponses, lastUserText, routerReply, startScriptedGemini, type GeminiReply, type GeminiRequest, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { runWhen, startRuntimeWorld, wakeOk } from '../runtime/helpers.ts';

/**
 * `gamma_local` end to end: the real Gemini CLI (pinned in test/coding-tools) run by Keel for an
 * agent, pointed by GOOGLE_GEMINI_BASE_URL at a scripted Gemini API. The scripted model makes the
 * agent use its own shell tool to call Keel's API with its run token; a second wake of the same
 * issue resumes the session (the model is shown the earlier turns).
 */
let t: TestKernel;
let company: any;
let gemini: string;
let model: ScriptedGemini;

/** What the agent's shell runs: comment on its issue and set it done, with the run's own variables (node is /usr/bin/node). */
const CALL_KEEL = `node -e "const h = { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' };
const u = process.env.SERVICE_API_URL + '/api/issues/' + process.env.SERVICE_TASK_ID;
fetch(u + '/comments', { method: 'POST', headers: h, body: JSON.stringify({ body: 'Gemini agent was here.' }) })
  .then((r) => { console.log('comment ' + r.status); return fetch(u, { method: 'PATCH', headers: h, body: JSON.stringify({ status: 'done' }) }); })
  .then((r) => console.log('status ' + r.status));"`;

/** The scripted model: a first wake comments through the shell, then answers; a later wake (its prompt says "again") answers at once. */
function script(request: GeminiRequest): GeminiReply {
  if (isJsonCall(request)) return routerReply();
  const prompt = lastUserText(request);
  if (prompt.includes('Reply with the single word OK')) return { text: 'OK' };
  if (lastFunctionResponses(request).length > 0) {
    return { text: ['Commented on the issue ', 'and set it done.'], usage: { promptTokenCount: 1300, cachedContentTokenCount: 1000, candidatesTokenCount: 12, thoughtsTokenCount: 40 } };
  }
  if (prompt.includes('over quota')) {
    return { error: { status: 429, message: 'You exceeded your current quota, please check your plan and billing details.', details: [
      { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier' }] },
    ] } };
  }
  if (prompt.includes('bad key')) return { error: { status: 401, message: 'API key not valid. Please pass a valid API key.' } };
  if (prompt.includes('single word OK')) return { text: 'OK', usage: { promptTokenCount: 20, candidatesTokenCount: 1 } };
  if (prompt.includes('briefly')) return { text: 'Hi.', usage: { promptTokenCount: 900, cachedContentTokenCount: 100, candidatesTokenCount: 4 } };
  if (prompt.includes('long nap')) return { functionCall: { name: 'run_shell_command', args: { command: 'sleep 300' } } };
  if (prompt.includes('again')) return { text: 'I remember: I already commented.', usage: { promptTokenCount: 1500, cachedContentTokenCount: 1300, candidatesTokenCount: 3 } };
  return { functionCall: { name: 'run_shell_command', args: { command: CALL_KEEL } }, usage: { promptTokenCount: 1200, cachedContentTokenCount: 200, candidatesTokenCount: 30 } };
}

/** A working directory the agent user owns: the CLI keeps its sessions per folder, so a resume needs the same one. */
async function workDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-gemini-work-'));
  await chmod(dir, 0o755);
  if (process.getuid?.() === 0) await promisify(execFile)('chown', ['keel-agent:keel-agent', dir]);
  return dir;
}

beforeAll(async () => {
  gemini = await codingTool('gemini');
  model = await startScriptedGemini(script);
  ({ t, company } = await startRuntimeWorld('Gemini Co'));
});
afterAll(async () => {
  await t?.stop();
  await model?.close();
});

const geminiAgent = async (config: Record<string, unknown> = {}) => createAgent(t.api, company.id, {
  adapterType: 'gamma_local',
  adapterConfig: { command: gemini, model: 'gemini-2.5-flash', cwd: await workDir(), env: { GEMINI_API_KEY: 'scripted-key', GOOGLE_GEMINI_BASE_URL: model.url }, timeoutSec: 120, graceSec: 2, ...config },
});

async function createIssue(title: string) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, { title });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const transcriptOf = async (runId: string) => (await t.api.get(`/api/heartbeat-runs/${runId}/transcript?limit=500`)).body.entries as any[];
const costEventsOf = async (runId: string) =>
  (await t.sql.query('select provider, model, input_tokens, cached_input_tokens, output_tokens, agent_id, issue_id from plugin_costs.cost_events where heartbeat_run_id = $1 order by created_at', [runId])).rows;
const ended = (run: any) => ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(run.status) && run.finishedAt !== null;

describe('a Gemini CLI agent', { timeout: 120_000 }, () => {
  it('uses its shell to comment on its issue with its run token, reports a transcript and its tokens, and resumes the session on the next wake', async () => {
    const agent = await geminiAgent();
    const issue = await createIssue('Look at the Gemini adapter');
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'first look', payload: { issueId: issue.id } })).run.id, ended, 120_000);
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'succeeded', exitCode: 0, errorCode: null });
    const sessionId = first.resultJson.sessionId as string;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.resultJson).toMatchObject({ result: 'Commented on the issue and set it done.', isError: false });
    expect(first.resultJson.usageUnknown).toBeUndefined();

    // The comment is the agent's, made in its run through its own shell; the issue is done.
    const comments = (await t.api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: 'Gemini agent was here.', authorAgentId: agent.id })]);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.status).toBe('done');

    // The transcript: the session, the shell call and what it printed, the answer, the result.
    const entries = await transcriptOf(first.id);
    expect(entries[0]).toMatchObject({ kind: 'init', sessionId, model: 'gemini-2.5-flash' });
    const call = entries.find((entry) => entry.kind === 'tool_call');
    expect(call).toMatchObject({ name: 'run_shell_command', input: { command: CALL_KEEL } });
    expect(entries.find((entry) => entry.kind === 'tool_result')).toMatchObject({ id: call.id, output: expect.stringContaining('comment 201') });
    expect(entries.filter((entry) => entry.kind === 'assistant').map((entry) => entry.text).join('')).toBe('Commented on the issue and set it done.');
    expect(entries.at(-1)).toMatchObject({ kind: 'result', isError: false });

    // The tokens as one cost event: 1200 + 1300 prompt tokens of which 200 + 1000 cached; 30 + 12 out and 40 thinking.
    expect(await costEventsOf(first.id)).toEqual([{
      provider: 'google', model: 'gemini-2.5-flash', input_tokens: '1300', cached_input_tokens: '1200', output_tokens: '82', agent_id: agent.id, issue_id: issue.id,
    }]);

    // A second wake of the same issue resumes the session: the model is shown the first run's turns.
    const before = model.generateCalls().length;
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'look again', payload: { issueId: issue.id } })).run.id, ended, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: sessionId });
    expect(second.resultJson).toMatchObject({ sessionId, result: 'I remember: I already commented.' });
    expect(second.resultJson.resumeRefused).toBeUndefined();
    const resumed = model.generateCalls().slice(before);
    expect(resumed).toHaveLength(1);
    const seen = JSON.stringify(resumed[0].body?.contents);
    expect(seen).toContain('Gemini agent was here.');
    expect(seen).toContain('Commented on the issue and set it done.');
    expect(await costEventsOf(second.id)).toEqual([expect.objectContaining({ input_tokens: '200', cached_input_tokens: '1300', output_tokens: '3' })]);
    expect((await t.api.get(`/api/issues/${issue.id}/comments`)).body).toHaveLength(1);

    // The environment test runs the same CLI: its version, and one minimal model call.
    const test = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(test.status, test.text).toBe(200);
    expect(test.body).toMatchObject({ ok: true, version: '0.61.0', checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
  });

  it('passes the environment test before its first run: the settings a run writes are written for the test too', async () => {
    const agent = await geminiAgent();
    const test = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(test.status, test.text).toBe(200);
    expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true, version: '0.61.0', checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
  });

  it('runs the CLI\'s own default model, auto, which routes the turn through a small model first: the usage of both is one cost event', async () => {
    const agent = await geminiAgent({ model: undefined });
    expect(agent.adapterConfig.model).toBe('auto');
    const before = model.requests.length;
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'say hi briefly' })).run.id, ended, 120_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', resultJson: { result: 'Hi.' } });
    const calls = model.requests.slice(before);
    expect(calls.map((request) => isJsonCall(request))).toEqual([true, false]);
    // Router: 50 in, 10 out; the turn: 900 in (100 cached), 4 out: named after the model that answered.
    expect(await costEventsOf(run.id)).toEqual([expect.objectContaining({ provider: 'google', model: calls[1].model, input_tokens: '850', cached_input_tokens: '100', output_tokens: '14' })]);
  });

  it('starts fresh in the same run when the CLI no longer has the session (here: it runs in another folder), and says so', async () => {
    const agent = await geminiAgent();
    const issue = await createIssue('Move folders');
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'first look', payload: { issueId: issue.id } })).run.id, ended, 120_000);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    const old = first.resultJson.sessionId as string;

    const moved = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { cwd: await workDir() } });
    expect(moved.status, moved.text).toBe(200);
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'look again', payload: { issueId: issue.id } })).run.id, ended, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: old, resultJson: { resumeRefused: { sessionId: old, startedFresh: true } } });
    expect(second.resultJson.sessionId).not.toBe(old);
    const log = (await t.api.get(`/api/heartbeat-runs/${second.id}/log`)).body.content as string;
    expect(log).toContain('Error resuming session');
    expect((await transcriptOf(second.id)).map((entry) => entry.message)).toContain(`Gemini CLI no longer had session ${old}: the run started a fresh session`);
  });

  it('is cancelled mid-turn, while its shell runs a command: the CLI and its shell\'s processes are gone', async () => {
    const agent = await geminiAgent();
    const { run } = await wakeOk(t.api, agent.id, { reason: 'take a long nap' });
    const cmdline = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '); } catch { return ''; } };
    await waitFor(async () => processesOfRun(run.id).some((pid) => cmdline(pid).startsWith('sleep 300')), 'the agent\'s shell to run its command', 60_000);
    expect(processesOfRun(run.id).length).toBeGreaterThan(1);
    const res = await t.api.post(`/api/heartbeat-runs/${run.id}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect((await runWhen(t, run.id, ended, 60_000)).status).toBe('cancelled');
    await waitFor(async () => processesOfRun(run.id).length === 0, 'every process of the run to be gone', 60_000);
  });

  it('fails classified when the API answers a daily quota exhausted or a key it does not accept', async () => {
    const agent = await geminiAgent();
    const quota = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'work while over quota' })).run.id, ended, 120_000);
    expect(quota, JSON.stringify(quota)).toMatchObject({ status: 'failed', exitCode: 173, errorCode: 'tool_quota_exhausted', resultJson: { isError: true, usageUnknown: true } });
    const auth = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'work with a bad key', forceFreshSession: true })).run.id, ended, 120_000);
    // The CLI exits 145 (401 modulo 256), which the PID namespace's shell status reads as 128 + SIGCHLD: the class comes from the result event.
    expect(auth, JSON.stringify(auth)).toMatchObject({ status: 'failed', errorCode: 'tool_auth_required' });
    expect((await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body.lastError).toContain('API key not valid');
  });

  it('fails as not installed, naming the install command, when its command is missing', async () => {
    const agent = await geminiAgent({ command: '/nonexistent/bin/gemini' });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, ended, 60_000);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'adapter_unavailable' });
    const state = (await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body;
    expect(state.lastError).toContain('npm install -g @google/gemini-cli');
  });
});
