import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { processesOfRun } from '../../support/processes.ts';
import { bash, conversationText, startAnthropicModel, toolResults, type AnthropicScript, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { waitFor } from '../../support/wait-for.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';

/**
 * alpha_local end to end: the real Claude Code (pinned in test/coding-tools) run by a real Keel
 * as the agent user, pointed with ANTHROPIC_BASE_URL at the scripted Anthropic model of this
 * process. The model makes the agent use its own Bash tool to call Keel with its run token.
 */
let t: TestKernel;
let company: any;
let model: ScriptedAnthropic;
let claude: string;
let script: AnthropicScript = () => ({ text: 'No script for this test.' });

beforeAll(async () => {
  claude = await codingTool('claude');
  model = await startAnthropicModel((request, history) => script(request, history));
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Claude Code Co' });
});
afterAll(async () => {
  await t?.stop();
  await model?.close();
});

/** A shell command the model has the agent run: Node's fetch against Keel with the run's token from the environment. */
function keel(method: string, path: string, body?: unknown): string {
  const init = `{method:"${method}",headers:{authorization:"Bearer "+process.env.SERVICE_API_KEY,"content-type":"application/json"}${body === undefined ? '' : `,body:JSON.stringify(${JSON.stringify(body)})`}}`;
  return `fetch(process.env.SERVICE_API_URL+${path},${init}).then(async (r)=>console.log(r.status, await r.text()))`;
}
const ISSUE = '"/api/issues/"+process.env.SERVICE_TASK_ID';
const node = (js: string) => `node -e '${js}'`;

async function claudeAgent(config: Record<string, unknown> = {}) {
  const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: `ANTHROPIC_KEY_${Math.random().toString(36).slice(2, 8)}`, value: 'sk-ant-scripted' });
  expect(secret.status, secret.text).toBe(201);
  return createAgent(t.api, company.id, {
    adapterType: 'alpha_local',
    adapterConfig: {
      command: claude, timeoutSec: 300, graceSec: 5,
      env: { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: { type: 'secret_ref', secretId: secret.body.id } },
      ...config,
    },
  });
}

async function transcriptOf(runId: string): Promise<any[]> {
  const res = await t.api.get(`/api/heartbeat-runs/${runId}/transcript`);
  expect(res.status, res.text).toBe(200);
  return res.body.entries;
}

const costEventsOf = async (runId: string) =>
  (await t.sql.query('select provider, model, billing_type, input_tokens, cached_input_tokens, output_tokens, cost_cents, agent_id, issue_id from plugin_costs.cost_events where heartbeat_run_id = $1', [runId])).rows;

describe('an alpha_local agent works on its issue with the real Claude Code', { timeout: 120_000 }, () => {
  let agent: any;
  let issue: any;
  let first: any;

  it('reads its issue, comments and sets it done through its own shell; the transcript, the usage and the session are kept', async () => {
    agent = await claudeAgent();
    issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Count the widgets', description: 'There are 7 widgets in the box.' })).body;
    script = (request) => {
      const step = toolResults(request).length;
      if (step === 0) return bash(node(keel('GET', ISSUE)), { text: 'Reading the issue first.', usage: { inputTokens: 100, outputTokens: 10, cacheCreationInputTokens: 50 } });
      if (step === 1) {
        return bash(node(`(async()=>{await ${keel('POST', `${ISSUE}+"/checkout"`, { agentId: agent.id })};await ${keel('POST', `${ISSUE}+"/comments"`, { body: 'Counted 7 widgets.' })}})()`), { usage: { inputTokens: 20, outputTokens: 12, cacheReadInputTokens: 150 } });
      }
      if (step === 2) return bash(node(keel('PATCH', ISSUE, { status: 'done' })), { usage: { inputTokens: 20, outputTokens: 8, cacheReadInputTokens: 170 } });
      return { text: 'Done: 7 widgets, issue closed.', usage: { inputTokens: 15, outputTokens: 5, cacheReadInputTokens: 190 } };
    };
    const asked = model.messages().length;
    first = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'count them', payload: { issueId: issue.id } })).run.id);
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'succeeded', exitCode: 0, errorCode: null, resultJson: { result: 'Done: 7 widgets, issue closed.', isError: false, turns: 4 } });
    expect(first.sessionIdAfter).toMatch(/^[0-9a-f-]{36}$/);

    // The model saw the issue (the prompt on stdin) and what each command answered.
    const conversation = model.messages().slice(asked);
    expect(conversation).toHaveLength(4);
    expect(conversationText(conversation[0])).toContain('There are 7 widgets in the box.');
    expect(toolResults(conversation[1])[0].text).toMatch(/^200 .*Count the widgets/);
    expect(toolResults(conversation[3]).map((result) => result.text.split('\n').map((line) => line.slice(0, 3)))).toEqual([['200'], ['200', '201'], ['200']]);

    // The comment is the agent's, and the issue is done.
    const comments = (await t.api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: 'Counted 7 widgets.', authorAgentId: agent.id })]);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.status).toBe('done');

    // The transcript is a conversation: init, text, each tool call with its input and its result, the final result.
    const entries = await transcriptOf(first.id);
    const kinds = entries.map((entry) => entry.kind);
    expect(kinds).toEqual(['init', 'assistant', 'tool_call', 'tool_result', 'tool_call', 'tool_result', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(entries[0]).toMatchObject({ kind: 'init', sessionId: first.sessionIdAfter, version: '2.1.332', tools: expect.arrayContaining(['Bash']) });
    expect(entries[1]).toMatchObject({ kind: 'assistant', text: 'Reading the issue first.' });
    expect(entries[2]).toMatchObject({ kind: 'tool_call', name: 'Bash', input: { command: expect.stringContaining('process.env.SERVICE_API_KEY') } });
    expect(entries[3]).toMatchObject({ kind: 'tool_result', id: entries[2].id, output: expect.stringMatching(/^200 /) });
    expect(entries.at(-1)).toMatchObject({ kind: 'result', text: 'Done: 7 widgets, issue closed.', isError: false, turns: 4 });

    // Usage from the result event: uncached input 155 + cache writes 50, cache reads 510, output 35.
    const costs = await costEventsOf(first.id);
    expect(costs).toEqual([expect.objectContaining({
      provider: 'anthropic', model: 'claude-opus-5-5', agent_id: agent.id, issue_id: issue.id,
      input_tokens: '205', cached_input_tokens: '510', output_tokens: '35',
    })]);
    // The result does not say how Claude Code signed in: the agent's env names an API key, so it is metered.
    expect(costs[0].billing_type).toBe('metered_api');
    expect(first.usageJson).toMatchObject({ inputTokens: 205, cachedInputTokens: 510, outputTokens: 35 });
  });

  it('a second wake of the same issue resumes the session: the model sees the earlier turns', async () => {
    script = () => ({ text: 'Already done earlier.', usage: { inputTokens: 30, outputTokens: 4, cacheReadInputTokens: 600 } });
    const asked = model.messages().length;
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id);
    expect(second, JSON.stringify(second)).toMatchObject({ status: 'succeeded', sessionIdBefore: first.sessionIdAfter, sessionIdAfter: first.sessionIdAfter, resultJson: { result: 'Already done earlier.' } });
    // The earlier turns come from the session: the model's own words and the commands it had run.
    const [request] = model.messages().slice(asked);
    expect(conversationText(request)).toContain('Reading the issue first.');
    expect(conversationText(request)).toContain('Done: 7 widgets, issue closed.');
    expect(await costEventsOf(second.id)).toEqual([expect.objectContaining({ input_tokens: '30', cached_input_tokens: '600', output_tokens: '4' })]);
  });

  it('a session the tool no longer has is started fresh in the same run, and the run says so', async () => {
    // The session's file goes from the agent's home, as when a home is restored from an older copy.
    const projects = join(t.dataDir, 'agent-homes', agent.id, '.claude', 'projects');
    for (const folder of await readdir(projects)) await rm(join(projects, folder, `${first.sessionIdAfter}.jsonl`), { force: true });
    script = (request) => ({ text: `Fresh start; earlier turns seen: ${conversationText(request).includes('Done: 7 widgets, issue closed.')}`, usage: { inputTokens: 40, outputTokens: 6 } });
    const third = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id);
    expect(third, JSON.stringify(third)).toMatchObject({
      status: 'succeeded', sessionIdBefore: first.sessionIdAfter,
      resultJson: { result: 'Fresh start; earlier turns seen: false', resumeRefused: { sessionId: first.sessionIdAfter, startedFresh: true } },
    });
    expect(third.sessionIdAfter).not.toBe(first.sessionIdAfter);
    const entries = await transcriptOf(third.id);
    expect(entries).toContainEqual(expect.objectContaining({ kind: 'error', message: `No conversation found with session ID: ${first.sessionIdAfter}` }));
    expect(entries).toContainEqual(expect.objectContaining({ kind: 'system', message: `Claude Code no longer had session ${first.sessionIdAfter}: the run started a fresh session` }));
    expect(entries.filter((entry) => entry.kind === 'init').at(-1)).toMatchObject({ sessionId: third.sessionIdAfter });
  });
});

describe('instructions and skills reach Claude Code where it reads them', { timeout: 120_000 }, () => {
  it('the instructions bundle is its user-level CLAUDE.md and a desired skill is in its skills folder: the model sees both; a skill no longer desired goes', async () => {
    const agent = await claudeAgent();
    expect((await t.api.put(`/api/agents/${agent.id}/instructions-bundle/file?path=AGENTS.md`, { content: '# House rules\nAlways answer in haiku (marker-7141).' })).status).toBe(201);
    const folder = await mkdtemp(join(tmpdir(), 'keel-claude-skill-'));
    await chmod(folder, 0o755);
    await writeFile(join(folder, 'SKILL.md'), '---\nname: Widget Counting\ndescription: Counts widgets precisely (marker-5532)\n---\n# Count widgets\n');
    const imported = await t.api.post(`/api/companies/${company.id}/skills/import`, { source: folder });
    expect(imported.status, imported.text).toBe(201);
    const synced = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [imported.body.imported[0].key] });
    expect(synced.status, synced.text).toBe(200);
    const runtimeName = synced.body.entries.find((entry: any) => entry.key === imported.body.imported[0].key).runtimeName;

    script = () => ({ text: 'Seen.', usage: { inputTokens: 10, outputTokens: 2 } });
    const asked = model.messages().length;
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const seen = JSON.stringify(model.messages().slice(asked)[0]);
    expect(seen).toContain('Always answer in haiku (marker-7141).');
    expect(seen).toContain('Counts widgets precisely (marker-5532)');
    expect(seen).toContain(runtimeName);

    // The skill is no longer desired: a fresh session of the next run is not offered it (a resumed one keeps its history).
    expect((await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [] })).status).toBe(200);
    const again = model.messages().length;
    expect((await runWhen(t, (await wakeOk(t.api, agent.id, { forceFreshSession: true })).run.id)).status).toBe('succeeded');
    const later = JSON.stringify(model.messages().slice(again)[0]);
    expect(later).not.toContain('marker-5532');
    expect(later).toContain('marker-7141');
  });
});

describe('stopping and failing', { timeout: 120_000 }, () => {
  it('a run cancelled while its command runs ends with the tool\'s whole process tree gone', async () => {
    const agent = await claudeAgent();
    script = (request) => (toolResults(request).length === 0 ? bash(node('setInterval(() => {}, 1000)'), { usage: { inputTokens: 10, outputTokens: 2 } }) : { text: 'never' });
    const { run } = await wakeOk(t.api, agent.id);
    // Claude Code, its shell and the command: three processes of the run.
    await waitFor(async () => processesOfRun(run.id).length >= 3 && (await transcriptOf(run.id)).some((entry) => entry.kind === 'tool_call'), 'the command to run');
    const cancel = await t.api.post(`/api/heartbeat-runs/${run.id}/cancel`, { reason: 'enough' });
    expect(cancel.status, cancel.text).toBeLessThan(300);
    const ended = await runWhen(t, run.id);
    expect(ended.status).toBe('cancelled');
    expect(processesOfRun(run.id)).toEqual([]);
  });

  it('a tool that is not installed fails the run as adapter_unavailable, naming the install command', async () => {
    const agent = await claudeAgent({ command: undefined });
    expect(agent.adapterConfig.command).toBe('claude'); // the default: looked up on PATH, where it is not
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect([run.status, run.errorCode]).toEqual(['failed', 'adapter_unavailable']);
    const state = (await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body;
    expect(state.lastError).toContain('npm install -g @anthropic-ai/claude-code');
  });
});

describe('alpha-login and the environment test', { timeout: 120_000 }, () => {
  it('an agent with an API key: logged in, and the test makes one real model call with it', async () => {
    const agent = await claudeAgent();
    const login = await t.api.post(`/api/agents/${agent.id}/alpha-login`, {});
    expect(login.status, login.text).toBe(200);
    expect(login.body).toMatchObject({ adapterType: 'alpha_local', status: 'logged_in', loggedIn: true, authMethod: 'api_key', credentialVariables: ['ANTHROPIC_API_KEY'] });
    script = () => ({ text: 'ready', usage: { inputTokens: 5, outputTokens: 1 } });
    const asked = model.messages().length;
    const test = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(test.status, test.text).toBe(200);
    expect(test.body).toMatchObject({ ok: true, version: '2.1.332', checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
    const [request] = model.messages().slice(asked);
    expect(request.tools ?? []).toEqual([]); // the probe offers the model no tools
  });

  it('an agent without a credential: what to do next, and the test names the same fix', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, env: { ANTHROPIC_BASE_URL: model.url } } });
    const login = await t.api.post(`/api/agents/${agent.id}/alpha-login`, {});
    expect(login.status, login.text).toBe(200);
    expect(login.body).toMatchObject({ status: 'action_required', loggedIn: false, authMethod: 'none', credentialVariables: [] });
    expect(login.body.options.map((option: any) => option.variable)).toEqual(['CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_API_KEY']);
    expect(login.body.options[0].steps[0]).toContain('claude setup-token');
    const test = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(test.body).toMatchObject({ ok: false, checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: false, message: expect.stringContaining('tool_auth_required') }] });
  });
});
