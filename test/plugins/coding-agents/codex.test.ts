import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { codingTool } from '../../support/coding-tools.ts';
import { processesOfRun } from '../../support/processes.ts';
import { allText, answersToolCall, lastUserText, startScriptedResponsesServer, type ResponsesRequest, type ScriptedReply, type ScriptedResponsesServer } from '../../support/scripted-models/openai-responses.ts';
import { runWhen, startRuntimeWorld, waitFor } from '../runtime/helpers.ts';

/**
 * `beta_local` end to end: a running Keel starts the real Codex CLI (the pinned one of
 * test/coding-tools) as the agent user, pointed by OPENAI_BASE_URL at a scripted Responses
 * model in this process. The scripted model has the agent use Codex's own shell tool to call
 * Keel's API with its run token: read its issue, comment on it, set it done.
 */

/** What the agent's shell runs: node reads its issue, comments, sets it done, all with the run token from its environment. */
const WORK_ON_ISSUE = `node -e "const u=process.env.SERVICE_API_URL, id=process.env.SERVICE_TASK_ID;`
  + ` const h={authorization:'Bearer '+process.env.SERVICE_API_KEY,'content-type':'application/json'};`
  + ` (async()=>{ const issue=await (await fetch(u+'/api/issues/'+id,{headers:h})).json();`
  + ` const c=await fetch(u+'/api/issues/'+id+'/comments',{method:'POST',headers:h,body:JSON.stringify({body:'Codex read '+issue.identifier+': '+issue.title})});`
  + ` const d=await fetch(u+'/api/issues/'+id,{method:'PATCH',headers:h,body:JSON.stringify({status:'done'})});`
  + ` console.log('comment', c.status, 'done', d.status); })()"`;

const SECOND_WAKE = 'Please confirm the fix is in';

let t: TestKernel;
let company: any;
let codex: string;
let server: ScriptedResponsesServer;
/** The script of the test that runs: each test sets its own. */
let script: (request: ResponsesRequest) => ScriptedReply = () => ({ text: 'unscripted' });

beforeAll(async () => {
  codex = await codingTool('codex');
  server = await startScriptedResponsesServer((request) => script(request));
  ({ t, company } = await startRuntimeWorld('Codex Co'));
});
afterAll(async () => {
  await t?.stop();
  await server?.close();
});

async function codexAgent(name: string, config: Record<string, unknown> = {}) {
  return createAgent(t.api, company.id, {
    name, adapterType: 'beta_local',
    adapterConfig: { command: codex, model: 'scripted-model', graceSec: 2, env: { OPENAI_BASE_URL: server.baseUrl, OPENAI_API_KEY: 'sk-scripted' }, ...config },
  });
}

async function assignIssue(agentId: string, title: string) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, { title, description: 'Look at it and close it.', assigneeAgentId: agentId });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** The runs of an agent, oldest first, once there are `count` of them and all ended. */
async function endedRuns(agentId: string, count: number) {
  const ids = await waitFor(async () => {
    const res = await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agentId}`);
    expect(res.status, res.text).toBe(200);
    return res.body.runs.length >= count ? (res.body.runs as any[]).map((run) => run.id as string).reverse() : undefined;
  }, `${count} runs of agent ${agentId}`, 120_000);
  const runs = [];
  for (const id of ids) runs.push(await runWhen(t, id, undefined, 180_000));
  return runs;
}

/** The run and its log, for an assertion's message. */
async function told(run: any): Promise<string> {
  const log = await t.api.get(`/api/heartbeat-runs/${run.id}/log`);
  return `${JSON.stringify(run)}\nlog:\n${log.body.content ?? log.text}`;
}

/** A run's transcript entries, without their sequence numbers and times. */
async function transcriptOf(runId: string): Promise<any[]> {
  const res = await t.api.get(`/api/heartbeat-runs/${runId}/transcript`);
  expect(res.status, res.text).toBe(200);
  return (res.body.entries as any[]).map(({ seq: _seq, at: _at, ...entry }) => entry);
}

const costEventsOf = async (runId: string) =>
  (await t.sql.query('select * from plugin_costs.cost_events where heartbeat_run_id = $1 order by created_at', [runId])).rows;

describe('a Codex agent (beta_local)', { timeout: 240_000 }, () => {
  it('works on its issue through its shell with its run token, reports its transcript and exact usage, and resumes its thread on the next wake without counting the thread twice', async () => {
    script = (request) => {
      if (answersToolCall(request)) return { text: 'Commented and closed the issue.', usage: { inputTokens: 1200, cachedInputTokens: 1000, outputTokens: 30 } };
      if (lastUserText(request).includes(SECOND_WAKE)) return { text: 'The fix is in.', usage: { inputTokens: 1500, cachedInputTokens: 1200, outputTokens: 10 } };
      return { shell: WORK_ON_ISSUE, reasoning: 'Read the issue, then comment and close it.', usage: { inputTokens: 1000, cachedInputTokens: 100, outputTokens: 20 } };
    };
    const agent = await codexAgent('Coder');
    const issue = await assignIssue(agent.id, 'Fix the flaky login');
    const [first] = await endedRuns(agent.id, 1);
    expect(first.status, await told(first)).toBe('succeeded');
    expect(first.resultJson).toMatchObject({ result: 'Commented and closed the issue.', isError: false });

    // The agent's own calls: a comment authored by it (in its run), the issue done.
    const comments = (await t.api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: `Codex read ${issue.identifier}: Fix the flaky login`, authorAgentId: agent.id })]);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.status).toBe('done');

    // The transcript: the thread, the reasoning, the shell call with its command and output, the answer.
    const entries = await transcriptOf(first.id);
    const threadId = entries.find((entry: any) => entry.kind === 'init')?.sessionId;
    expect(threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(entries[0]).toEqual({ kind: 'init', sessionId: threadId, model: 'scripted-model' });
    // An unknown model's missing metadata is a warning: kept, and the run still succeeded.
    expect(entries[1]).toEqual({ kind: 'system', message: expect.stringContaining('Model metadata for `scripted-model` not found') });
    expect(entries).toEqual(expect.arrayContaining([
      { kind: 'thinking', text: 'Read the issue, then comment and close it.' },
      expect.objectContaining({ kind: 'tool_call', name: 'shell', input: { command: expect.stringContaining('SERVICE_API_KEY') } }),
      expect.objectContaining({ kind: 'tool_result', output: 'comment 201 done 200\n', isError: false }),
      { kind: 'assistant', text: 'Commented and closed the issue.' },
    ]));
    // The run token never reached the arguments or the transcript.
    expect(JSON.stringify(entries)).not.toMatch(/Bearer [A-Za-z0-9]{10}/);

    // Exact usage: the two model calls, input split into uncached and cached.
    expect((await costEventsOf(first.id)).map((event: any) => [event.provider, event.model, Number(event.input_tokens), Number(event.cached_input_tokens), Number(event.output_tokens)]))
      .toEqual([['openai', 'scripted-model', (1000 - 100) + (1200 - 1000), 100 + 1000, 20 + 30]]);

    // A board comment wakes the agent on the same issue: Codex resumes the thread, and the model sees the earlier turns.
    const asked = await t.api.post(`/api/issues/${issue.id}/comments`, { body: SECOND_WAKE });
    expect(asked.status, asked.text).toBe(201);
    const [, second] = await endedRuns(agent.id, 2);
    expect(second.status, await told(second)).toBe('succeeded');
    expect(second.sessionIdBefore).toBe(threadId);
    const resumed = server.requests.map((request) => request.body).filter((body) => lastUserText(body).includes(SECOND_WAKE));
    expect(resumed).toHaveLength(1);
    expect(allText(resumed[0]!)).toContain('Commented and closed the issue.');
    expect(allText(resumed[0]!)).toContain('comment 201 done 200');
    // Codex reports the thread's total (3700 in, 2300 cached, 60 out): only this wake's call is metered.
    expect((await costEventsOf(second.id)).map((event: any) => [Number(event.input_tokens), Number(event.cached_input_tokens), Number(event.output_tokens)])).toEqual([[1500 - 1200, 1200, 10]]);
  });

  it('starts a fresh thread in the same run when Codex no longer has the one to resume, and says so', async () => {
    script = () => ({ text: 'Started over.', usage: { inputTokens: 400, cachedInputTokens: 0, outputTokens: 5 } });
    const agent = await codexAgent('Forgetful');
    const issue = await assignIssue(agent.id, 'Resume me');
    const [first] = await endedRuns(agent.id, 1);
    expect(first.status, await told(first)).toBe('succeeded');
    // The task's session names a thread Codex never had.
    const lost = '01a2260b-0000-7000-8000-000000000000';
    await t.sql.query('update plugin_runtime.task_sessions set session_id = $1 where agent_id = $2', [lost, agent.id]);
    await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Once more' });
    const [, second] = await endedRuns(agent.id, 2);
    expect(second.status, await told(second)).toBe('succeeded');
    expect(second.resultJson).toMatchObject({ result: 'Started over.', resumeRefused: { sessionId: lost, startedFresh: true } });
    const log = (await t.api.get(`/api/heartbeat-runs/${second.id}/log`)).body.content as string;
    expect(log).toContain(`no rollout found for thread id ${lost}`);
    expect(await transcriptOf(second.id)).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'system', message: expect.stringContaining(lost) })]));
    expect(second.sessionIdAfter).not.toBe(lost);
  });

  it('cancelled mid-turn: Codex and the command its shell runs are gone', async () => {
    script = (request) => (answersToolCall(request) ? { hang: { text: 'still working' } } : { shell: 'sleep 600' });
    const agent = await codexAgent('Sleeper');
    await assignIssue(agent.id, 'Take your time');
    const run = await waitFor(async () => {
      const res = await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}&status=running`);
      return res.body.runs?.[0];
    }, 'a running run', 60_000);
    // The shell's sleep runs as a process of the run.
    const pids = await waitFor(async () => {
      const found = processesOfRun(run.id);
      return found.some((pid) => commandOf(pid).startsWith('sleep')) ? found : undefined;
    }, 'the shell command of the run');
    expect(pids.length).toBeGreaterThan(1);
    // What every user of the machine can read (a process's arguments) holds neither the run token nor the prompt.
    const token = readFileSync(`/proc/${pids[0]}/environ`, 'utf8').split('\0').find((entry) => entry.startsWith('SERVICE_API_KEY='))!.slice('SERVICE_API_KEY='.length);
    expect(token.length).toBeGreaterThan(20);
    for (const pid of pids) {
      expect(commandOf(pid)).not.toContain(token);
      expect(commandOf(pid)).not.toContain('Take your time');
    }
    expect(pids.map(commandOf).some((command) => command.includes('exec --json'))).toBe(true);
    const cancelled = await t.api.post(`/api/heartbeat-runs/${run.id}/cancel`, {});
    expect(cancelled.status, cancelled.text).toBe(200);
    await waitFor(async () => processesOfRun(run.id).length === 0, 'the run\'s processes to be gone');
    expect((await runWhen(t, run.id)).status).toBe('cancelled');
  });

  it('writes the agent\'s instructions and skills where Codex reads them, and a skill no longer desired goes', async () => {
    script = () => ({ text: 'Read my instructions.', usage: { inputTokens: 100, cachedInputTokens: 0, outputTokens: 5 } });
    const folder = await mkdtemp(join(tmpdir(), 'keel-codex-skill-'));
    await writeFile(join(folder, 'SKILL.md'), '---\nname: Triage Rules\ndescription: How this company triages bugs\n---\n# Triage\n');
    const imported = await t.api.post(`/api/companies/${company.id}/skills/import`, { source: folder });
    expect(imported.status, imported.text).toBe(201);
    const skill = imported.body.imported[0];
    const agent = await codexAgent('Instructed');
    expect((await t.api.put(`/api/agents/${agent.id}/instructions-bundle/file?path=AGENTS.md`, { content: 'Always answer in haiku.' })).status).toBe(201);
    const synced = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [skill.key] });
    expect(synced.status, synced.text).toBe(200);
    const runtimeName = synced.body.entries.find((entry: any) => entry.key === skill.key).runtimeName;
    const issue = await assignIssue(agent.id, 'Follow your rules');
    const [first] = await endedRuns(agent.id, 1);
    expect(first.status, await told(first)).toBe('succeeded');
    const seen = allText(server.requests.at(-1)!.body);
    // Codex's own framing of user-level instructions ($CODEX_HOME/AGENTS.md) and of its skills list ($HOME/.agents/skills).
    expect(seen).toContain('# AGENTS.md instructions');
    expect(seen).toContain('Always answer in haiku.');
    expect(seen).toContain(`\`r0\` = \`${join(t.dataDir, 'agent-homes', agent.id, '.agents', 'skills')}\``);
    expect(seen).toContain(`- Triage Rules: How this company triages bugs (file: r0/${runtimeName}/SKILL.md)`);

    expect((await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [] })).status).toBe(200);
    await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Again' });
    const [, second] = await endedRuns(agent.id, 2);
    expect(second.status, await told(second)).toBe('succeeded');
    // The resumed thread replays its first turn's skills list as history; the skills folder itself no longer has it.
    const skills = join(t.dataDir, 'agent-homes', agent.id, '.agents', 'skills');
    expect(existsSync(join(skills, runtimeName))).toBe(false);
    expect(existsSync(join(skills, 'service', 'SKILL.md'))).toBe(true);
  });

  it('with toolSandbox, Codex\'s own sandbox keeps the shell to the working directory and still lets it reach Keel', async () => {
    const outside = await mkdtemp(join('/var/tmp', 'keel-codex-outside-'));
    await chmod(outside, 0o777);
    script = (request) => (answersToolCall(request)
      ? { text: 'Done inside the sandbox.', usage: { inputTokens: 100, cachedInputTokens: 0, outputTokens: 5 } }
      : { shell: `touch ${outside}/escaped; touch inside.txt && echo wrote-inside; ${WORK_ON_ISSUE}`, usage: { inputTokens: 100, cachedInputTokens: 0, outputTokens: 5 } });
    const agent = await codexAgent('Sandboxed', { toolSandbox: true });
    const issue = await assignIssue(agent.id, 'Stay inside');
    const [run] = await endedRuns(agent.id, 1);
    expect(run.status, await told(run)).toBe('succeeded');
    const result = (await transcriptOf(run.id)).find((entry) => entry.kind === 'tool_result');
    expect(result.output).toContain('Read-only file system');
    expect(result.output).toContain('wrote-inside');
    expect(result.output).toContain('comment 201 done 200');
    expect(await readdir(outside)).toEqual([]);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.status).toBe('done');
    await rm(outside, { recursive: true, force: true });
  });

  it('a usage limit fails the run as rate limited, with the reset time Codex gives', async () => {
    // 1796300000 is 2026-12-03T12:13:20Z; Codex words it to the minute.
    script = () => ({ httpError: { status: 429, body: { error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', resets_at: 1796300000 } } } });
    const agent = await codexAgent('Limited');
    await assignIssue(agent.id, 'Too much');
    const [run] = await endedRuns(agent.id, 1);
    expect([run.status, run.errorCode], await told(run)).toEqual(['failed', 'tool_rate_limited']);
    expect(run.resultJson).toMatchObject({ isError: true, retryAt: '2026-12-03T12:13:00.000Z', usageUnknown: true });
  });

  it('the environment test runs Codex\'s version check and one model call with the agent\'s configuration, and says what to fix', async () => {
    script = () => ({ text: 'OK', usage: { inputTokens: 50, cachedInputTokens: 0, outputTokens: 1 } });
    const agent = await codexAgent('Tested');
    const before = server.requests.length;
    const ok = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, version: '0.171.0' });
    expect(ok.body.checks.map((check: any) => [check.name, check.ok])).toEqual([['version', true], ['model_call', true]]);
    expect(server.requests.slice(before).map((request) => lastUserText(request.body))).toEqual(['Reply with the single word OK.']);

    script = () => ({ httpError: { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } } });
    const refused = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body.ok).toBe(false);
    expect(refused.body.checks.find((check: any) => check.name === 'model_call')).toMatchObject({ ok: false, message: expect.stringContaining('tool_auth_required'), fix: expect.any(String) });
  });

  it('a Codex that is not installed fails the run with adapter_unavailable naming the install command', async () => {
    const agent = await codexAgent('Missing', { command: '/nonexistent/codex' });
    await assignIssue(agent.id, 'Nobody home');
    const [run] = await endedRuns(agent.id, 1);
    expect([run.status, run.errorCode]).toEqual(['failed', 'adapter_unavailable']);
    const state = (await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body;
    expect(state.lastError).toContain('npm install -g @openai/codex');
  });
});

function commandOf(pid: number): string {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '); } catch { return ''; }
}
