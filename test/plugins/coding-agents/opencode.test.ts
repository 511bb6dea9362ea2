import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { startScriptedChat, transcriptOf as requestText, type ScriptedChat } from '../../support/scripted-models/openai-chat.ts';
import { processesOfRun } from '../../support/processes.ts';
import { runWhen, startRuntimeWorld, waitFor, wakeOk } from '../runtime/helpers.ts';
import { commentingModel, costEventsOf, expectRunCosts, FINAL_TEXT, giveSkill, LONG_TASK, skillDescriptions, transcriptOf } from './chat-tools.ts';

/**
 * A delta_local agent runs the real OpenCode (the pinned release) against a scripted Chat
 * Completions model, which has it use its own shell tool to comment on its issue with the run's
 * token. OpenCode reaches the model through a custom provider in OPENCODE_CONFIG_CONTENT, set in
 * the agent's env as an operator would.
 */
let t: TestKernel;
let company: any;
let model: ScriptedChat;
let opencode: string;

beforeAll(async () => {
  opencode = await codingTool('opencode');
  ({ t, company } = await startRuntimeWorld('OpenCode Co'));
  model = await startScriptedChat(commentingModel('Looked at it with OpenCode.'), { models: ['scripted-model'] });
});
afterAll(async () => { await model?.close(); await t?.stop(); });

function providerConfig(): string {
  return JSON.stringify({
    provider: {
      scripted: {
        npm: '@ai-sdk/openai-compatible', name: 'Scripted', options: { baseURL: model.url, apiKey: 'sk-scripted' },
        models: { 'scripted-model': { name: 'Scripted model', cost: { input: 3, output: 15, cache_read: 0.3 } } },
      },
    },
  });
}

/** A working folder the agent user may write in, kept across runs. */
async function workFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-opencode-work-'));
  await chmod(dir, 0o777);
  return dir;
}

/** A run that resumed nothing: the tool refused the session, the kernel started it fresh, the transcript says so. */
async function expectStartedFresh(run: any, refused: string, refusal: string): Promise<void> {
  expect(run, JSON.stringify(run)).toMatchObject({
    status: 'succeeded', sessionIdBefore: refused, resultJson: { result: FINAL_TEXT, resumeRefused: { sessionId: refused, startedFresh: true } },
  });
  expect(run.resultJson.sessionId).toMatch(/^ses_/);
  expect(run.resultJson.sessionId).not.toBe(refused);
  expect((await t.api.get(`/api/heartbeat-runs/${run.id}/log`)).body.content).toContain(refusal);
  expect(await transcriptOf(t, run.id)).toContainEqual(expect.objectContaining({ kind: 'system', message: expect.stringContaining(`no longer had session ${refused}`) }));
}

async function createIssue(title: string) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, { title });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe('an OpenCode agent', () => {
  it('passes the environment test: its version and one minimal model call as its runs make them', async () => {
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: { command: opencode, model: 'scripted/scripted-model', env: { OPENCODE_CONFIG_CONTENT: providerConfig(), OPENCODE_DISABLE_MODELS_FETCH: '1' } },
    });
    const res = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ ok: true, adapterType: 'delta_local', version: '1.18.33', checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
  }, 300_000);

  it('works its issue through its shell with the run token, reports a transcript and its usage, and resumes its session on the next wake', async () => {
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: {
        // A fixed working folder: OpenCode resumes a session only in the folder it was created in.
        command: opencode, cwd: await workFolder(), model: 'scripted/scripted-model', timeoutSec: 180, graceSec: 2,
        env: { OPENCODE_CONFIG_CONTENT: providerConfig(), OPENCODE_DISABLE_MODELS_FETCH: '1' },
      },
    });
    const instructions = await t.api.put(`/api/agents/${agent.id}/instructions-bundle/file?path=AGENTS.md`, { content: 'Always sign as the OpenCode agent of Keel.' });
    expect(instructions.status, instructions.text).toBeLessThan(300);
    const runtimeName = await giveSkill(t, company.id, agent.id, 'greeting-notes', 'Writes greeting notes for OpenCode agents');
    const issue = await createIssue('Say hello on the issue');
    const callsAtStart = model.completions().length;
    const woken = await wakeOk(t.api, agent.id, { reason: 'please look', payload: { issueId: issue.id } });
    const run = await runWhen(t, woken.run.id, undefined, 120_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', exitCode: 0, errorCode: null, issueId: issue.id });
    const sessionId = run.resultJson.sessionId as string;
    expect(run.resultJson).toMatchObject({ result: FINAL_TEXT, isError: false, sessionId: expect.stringMatching(/^ses_/) });
    expect(run.resultJson.usageUnknown).toBeUndefined();

    // The model was given the issue in the prompt, and the tool ran the command as the agent.
    const firstCalls = model.completions().slice(callsAtStart);
    expect(requestText(firstCalls[0]!)).toContain(issue.identifier);
    // The instructions and the skills (the required base skill at least) are where OpenCode reads them, and reach the model.
    expect(JSON.stringify(firstCalls[0]!.body)).toContain('Always sign as the OpenCode agent of Keel.');
    const skills = await skillDescriptions(t, agent.id, '.config/opencode/skills');
    expect(skills).toContain('Writes greeting notes for OpenCode agents');
    expect(await readdir(join(t.dataDir, 'agent-homes', agent.id, '.config/opencode/skills'))).toContain(runtimeName);
    for (const description of skills) expect(JSON.stringify(firstCalls[0]!.body)).toContain(JSON.stringify(description).slice(1, -1).slice(0, 40));
    const comments = (await t.api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: 'Looked at it with OpenCode.', authorAgentId: agent.id })]);

    // The transcript: the text, the shell call with its input and output, the final text.
    const entries = await transcriptOf(t, run.id);
    expect(entries.map((entry) => entry.kind)).toEqual(['assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(entries[1]).toMatchObject({ name: 'bash', input: { command: expect.stringContaining('/comments') } });
    expect(entries[2].output).toContain('comment answered 201');
    expect(entries[4]).toMatchObject({ kind: 'result', text: FINAL_TEXT });

    // Each model call a cost event, split into uncached and cached input as OpenCode reports it.
    expectRunCosts(await costEventsOf(t, run.id), agent.id, issue.id, 'scripted', 'scripted-model');

    // The next wake of the same issue resumes the session: the model sees the first run's turns.
    const callsBefore = model.completions().length;
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'again', payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: sessionId, resultJson: { sessionId, result: FINAL_TEXT } });
    const resumed = model.completions()[callsBefore]!;
    expect(requestText(resumed)).toContain('Commenting now.');
    expect(requestText(resumed)).toContain(FINAL_TEXT);
    expect((resumed.body?.messages ?? []).filter((message) => message.role === 'user')).toHaveLength(2);
    expect((await t.api.get(`/api/issues/${issue.id}/comments`)).body).toHaveLength(2);
  }, 300_000);

  it('starts fresh in the same run when OpenCode no longer has the session, and says so', async () => {
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: { command: opencode, cwd: await workFolder(), model: 'scripted/scripted-model', timeoutSec: 180, graceSec: 2, env: { OPENCODE_CONFIG_CONTENT: providerConfig(), OPENCODE_DISABLE_MODELS_FETCH: '1' } },
    });
    const issue = await createIssue('A forgotten session');
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    // OpenCode's store (a SQLite database in the agent's home) loses the session.
    await rm(join(t.dataDir, 'agent-homes', agent.id, '.local/share/opencode'), { recursive: true, force: true });
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    await expectStartedFresh(second, first.resultJson.sessionId, 'Session not found');
    const sessions = (await t.api.get(`/api/agents/${agent.id}/task-sessions`)).body;
    expect(sessions).toEqual([expect.objectContaining({ taskKey: issue.id, sessionId: second.resultJson.sessionId })]);
  }, 300_000);

  it('without a configured cwd works in one folder of its home on every run, so its session resumes there', async () => {
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: { command: opencode, model: 'scripted/scripted-model', timeoutSec: 180, graceSec: 2, env: { OPENCODE_CONFIG_CONTENT: providerConfig(), OPENCODE_DISABLE_MODELS_FETCH: '1' } },
    });
    const issue = await createIssue('A folder of its home');
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, undefined, 120_000);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: first.resultJson.sessionId, resultJson: { sessionId: first.resultJson.sessionId, result: FINAL_TEXT } });
    expect(second.resultJson.resumeRefused).toBeUndefined();
  }, 300_000);

  it('is cancelled mid-turn: OpenCode and the command its shell runs are gone', async () => {
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: { command: opencode, cwd: await workFolder(), model: 'scripted/scripted-model', timeoutSec: 180, graceSec: 2, env: { OPENCODE_CONFIG_CONTENT: providerConfig(), OPENCODE_DISABLE_MODELS_FETCH: '1' } },
    });
    const issue = await createIssue(`${LONG_TASK}: wait a long time`);
    const { run } = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const commandOf = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '); } catch { return ''; } };
    await waitFor(async () => processesOfRun(run.id).some((pid) => commandOf(pid).includes('sleep 600')), 'the shell command to run', 120_000);
    const cancelled = await t.api.post(`/api/heartbeat-runs/${run.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect((await runWhen(t, run.id, undefined, 60_000)).status).toBe('cancelled');
    await waitFor(async () => processesOfRun(run.id).length === 0, 'the tool\'s process tree to be gone', 30_000);
  }, 300_000);

  it('fails as not installed, naming the install command, when its command is missing; the environment test says the same', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'delta_local', adapterConfig: { command: '/nonexistent/bin/opencode' } });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, {})).run.id, undefined, 60_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'failed', errorCode: 'adapter_unavailable' });
    expect((await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body.lastError).toContain('npm install -g opencode-ai');
    const tested = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(tested.body).toMatchObject({ ok: false, checks: [{ name: 'installed', ok: false, fix: 'npm install -g opencode-ai' }] });
  }, 120_000);
});
