import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { eventsSettled } from '../../support/events.ts';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { startScriptedChat, transcriptOf as requestText, type ScriptedChat } from '../../support/scripted-models/openai-chat.ts';
import { processesOfRun } from '../../support/processes.ts';
import { runWhen, startRuntimeWorld, waitFor, wakeOk } from '../runtime/helpers.ts';
import { commentingModel, costEventsOf, expectRunCosts, FINAL_TEXT, giveSkill, LONG_TASK, REFUSED_MODEL, skillDescriptions, transcriptOf } from './chat-tools.ts';

/**
 * A pi_local agent runs the real Pi (the pinned release) against a scripted Chat Completions
 * model, which has it use its shell tool to comment on its issue with the run's token. Pi reads
 * custom providers only from models.json in its configuration folder: the agent's env points
 * PI_CODING_AGENT_DIR at a folder holding one, as an operator would share a provider set-up.
 */
let t: TestKernel;
let company: any;
let model: ScriptedChat;
let pi: string;
let piConfig: string;

beforeAll(async () => {
  pi = await codingTool('pi');
  ({ t, company } = await startRuntimeWorld('Pi Co'));
  model = await startScriptedChat(commentingModel('Looked at it with Pi.'), { models: ['scripted-model'] });
  piConfig = await mkdtemp(join(tmpdir(), 'keel-pi-config-'));
  // The agent user reads models.json and writes auth.json and settings beside it.
  await chmod(piConfig, 0o777);
  await writeFile(join(piConfig, 'models.json'), JSON.stringify({
    providers: {
      scripted: {
        baseUrl: model.url, api: 'openai-completions', apiKey: 'sk-scripted', compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: 'scripted-model', cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 0 } }, { id: REFUSED_MODEL }],
      },
    },
  }), { mode: 0o644 });
});
afterAll(async () => { await model?.close(); await t?.stop(); });

async function workFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-pi-work-'));
  await chmod(dir, 0o777);
  return dir;
}

const piAgent = async (config: Record<string, unknown> = {}) => createAgent(t.api, company.id, {
  adapterType: 'pi_local',
  adapterConfig: { command: pi, model: 'scripted/scripted-model', timeoutSec: 180, graceSec: 2, env: { PI_CODING_AGENT_DIR: piConfig }, ...config },
});

async function createIssue(title: string) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, { title });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe('a Pi agent', () => {
  it('passes the environment test: its version and one minimal model call as its runs make them; a refused call names the credentials', async () => {
    const agent = await piAgent();
    const res = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ ok: true, adapterType: 'pi_local', version: '0.73.1', checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
    const refused = await piAgent({ model: `scripted/${REFUSED_MODEL}` });
    const failed = await t.api.post(`/api/agents/${refused.id}/adapter-test`, {});
    expect(failed.body).toMatchObject({ ok: false, checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: false, message: expect.stringContaining('tool_auth_required'), fix: expect.any(String) }] });
  }, 300_000);

  it('works its issue through its shell with the run token, with its instructions, reports a transcript and its usage, and resumes its session', async () => {
    // A fixed working folder: Pi resumes a session only where it was created.
    const agent = await piAgent({ cwd: await workFolder() });
    const instructions = await t.api.put(`/api/agents/${agent.id}/instructions-bundle/file?path=AGENTS.md`, { content: 'Always sign as the Pi agent of Keel.' });
    expect(instructions.status, instructions.text).toBeLessThan(300);
    const runtimeName = await giveSkill(t, company.id, agent.id, 'greeting-notes', 'Writes greeting notes for Pi agents');
    const issue = await createIssue('Say hello on the issue');
    const callsAtStart = model.completions().length;
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'please look', payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', exitCode: 0, errorCode: null, issueId: issue.id });
    const sessionId = run.resultJson.sessionId as string;
    expect(run.resultJson).toMatchObject({ result: FINAL_TEXT, isError: false, subtype: 'stop', sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(run.resultJson.usageUnknown).toBeUndefined();

    // The model saw the issue in the prompt and the instructions in its system prompt.
    const first = model.completions()[callsAtStart]!;
    expect(requestText(first)).toContain(issue.identifier);
    expect(first.body?.messages?.[0]).toMatchObject({ role: 'system', content: expect.stringContaining('Always sign as the Pi agent of Keel.') });
    // The agent's skills (the required base skill at least) are where Pi discovers them, and listed to the model.
    const skills = await skillDescriptions(t, agent.id, '.agents/skills');
    expect(skills).toContain('Writes greeting notes for Pi agents');
    expect(await readdir(join(t.dataDir, 'agent-homes', agent.id, '.agents/skills'))).toContain(runtimeName);
    for (const description of skills) expect(JSON.stringify(first.body)).toContain(JSON.stringify(description).slice(1, -1).slice(0, 40));
    const comments = (await t.api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: 'Looked at it with Pi.', authorAgentId: agent.id })]);

    const entries = await transcriptOf(t, run.id);
    expect(entries.map((entry) => entry.kind)).toEqual(['init', 'assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(entries[0]).toMatchObject({ kind: 'init', sessionId });
    expect(entries[2]).toMatchObject({ name: 'bash', input: { command: expect.stringContaining('/comments') } });
    expect(entries[3].output).toContain('comment answered 201');
    expect(entries[5]).toMatchObject({ kind: 'result', text: FINAL_TEXT });

    expectRunCosts(await costEventsOf(t, run.id), agent.id, issue.id, 'scripted', 'scripted-model');

    const callsBefore = model.completions().length;
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'again', payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: sessionId, resultJson: { sessionId, result: FINAL_TEXT } });
    const resumed = model.completions()[callsBefore]!;
    expect(requestText(resumed)).toContain('Commenting now.');
    expect(requestText(resumed)).toContain(FINAL_TEXT);
    expect((resumed.body?.messages ?? []).filter((message) => message.role === 'user')).toHaveLength(2);
    expect((await t.api.get(`/api/issues/${issue.id}/comments`)).body).toHaveLength(2);
  }, 300_000);

  it('starts fresh in the same run when Pi no longer has the session, and says so', async () => {
    // No cwd: the agent works in one folder of its home, so the first session could resume there.
    const agent = await piAgent();
    const issue = await createIssue('A forgotten session');
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    const refused = first.resultJson.sessionId as string;
    await rm(join(t.dataDir, 'agent-homes', agent.id, '.pi/agent/sessions'), { recursive: true, force: true });
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({
      status: 'succeeded', sessionIdBefore: refused, resultJson: { result: FINAL_TEXT, resumeRefused: { sessionId: refused, startedFresh: true } },
    });
    expect(second.resultJson.sessionId).not.toBe(refused);
    expect((await t.api.get(`/api/heartbeat-runs/${second.id}/log`)).body.content).toContain(`No session found matching '${refused}'`);
    expect(await transcriptOf(t, second.id)).toContainEqual(expect.objectContaining({ kind: 'system', message: expect.stringContaining(`no longer had session ${refused}`) }));
    const sessions = (await t.api.get(`/api/agents/${agent.id}/task-sessions`)).body;
    expect(sessions).toEqual([expect.objectContaining({ taskKey: issue.id, sessionId: second.resultJson.sessionId })]);
  }, 300_000);

  it('fails a run whose model call is refused although Pi exits 0, naming the credentials', async () => {
    const agent = await piAgent({ cwd: await workFolder(), model: `scripted/${REFUSED_MODEL}` });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, {})).run.id, undefined, 120_000);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: 'failed', exitCode: 0, errorCode: 'tool_auth_required', resultJson: { isError: true, result: '401 Incorrect API key provided', usageUnknown: true },
    });
    expect(await transcriptOf(t, run.id)).toContainEqual({ seq: expect.any(Number), at: expect.any(String), kind: 'error', message: '401 Incorrect API key provided' });
    expect(await costEventsOf(t, run.id)).toEqual([]);
  }, 300_000);

  it('is cancelled mid-turn: Pi and the command its shell runs are gone', async () => {
    const agent = await piAgent({ cwd: await workFolder() });
    const issue = await createIssue(`${LONG_TASK}: wait a long time`);
    const { run } = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const commandOf = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '); } catch { return ''; } };
    await waitFor(async () => processesOfRun(run.id).some((pid) => commandOf(pid).startsWith('sleep 600')), 'the shell command to run', 120_000);
    const cancelled = await t.api.post(`/api/heartbeat-runs/${run.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    const ended = await runWhen(t, run.id, undefined, 60_000);
    expect(ended.status).toBe('cancelled');
    await waitFor(async () => processesOfRun(run.id).length === 0, 'the tool\'s process tree to be gone', 30_000);
    // What the tool reported before the cancel is kept (its last log batch may be stored as the
    // process ends, and reach the run once its deliveries have settled).
    await eventsSettled(t);
    expect((await transcriptOf(t, run.id)).map((entry) => entry.kind)).toEqual(expect.arrayContaining(['init', 'assistant', 'tool_call']));
  }, 300_000);

  it('fails as not installed, naming the install command, when its command is missing; the environment test says the same', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'pi_local', adapterConfig: { command: '/nonexistent/bin/pi' } });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, {})).run.id, undefined, 60_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'failed', errorCode: 'adapter_unavailable' });
    expect((await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body.lastError).toContain('npm install -g @mariozechner/pi-coding-agent');
    const tested = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(tested.body).toMatchObject({ ok: false, checks: [{ name: 'installed', ok: false, fix: 'npm install -g @mariozechner/pi-coding-agent' }] });
  }, 120_000);
});
