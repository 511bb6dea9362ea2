import { chmod, lstat, mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { processAgent, runWhen, startRuntimeWorld, wakeOk } from './helpers.ts';

/**
 * Tool launches (kernel/executions/tool-launch.ts): a plugin that contributes an adapter type
 * runs the agent's board-approved command with its own arguments, a prompt on standard input, in
 * the agent's persistent home, with one retry when the tool refuses to resume. The fixture
 * plugin takes what to launch from the agent's adapterConfig.launch; the tool is a Node script.
 */
const LAUNCHER = fileURLToPath(new URL('./fixtures/tool-launcher', import.meta.url));
const TOOL = `const fs = require('node:fs');
let stdin = ''; process.stdin.on('data', (d) => { stdin += d; }); process.stdin.on('end', () => {
  const args = process.argv.slice(2);
  if (args[0] === '--resume') { console.error('Error: No conversation found with session ID: ' + args[1]); process.exit(1); }
  if (args[0] === '--write-home') fs.writeFileSync(process.env.HOME + '/note.txt', args[1]);
  if (args[0] === '--link-home') fs.symlinkSync(args[1], process.env.HOME + '/' + args[2]);
  const read = (path) => { try { return fs.readFileSync(path, 'utf8'); } catch { return null; } };
  console.log(JSON.stringify({ type: 'service.result', result: { args, stdin, home: process.env.HOME, toolConfig: process.env.TOOL_CONFIG ?? null,
    note: read(process.env.HOME + '/note.txt'), skill: read((process.env.TOOL_CONFIG ?? '') + '/skills/a/SKILL.md'), hasToken: Boolean(process.env.SERVICE_API_KEY),
    tmp: process.env.TMPDIR, flag: process.env.TOOL_FLAG ?? null, uid: process.getuid(), cwd: process.cwd(), given: read('given.txt'),
    apiUrl: process.env.SERVICE_API_URL, llmUrl: process.env.SERVICE_LLM_URL ?? null,
    toolKeyIsRunToken: Boolean(process.env.TOOL_API_KEY) && process.env.TOOL_API_KEY === process.env.SERVICE_API_KEY, toolKey: process.env.TOOL_API_KEY ?? null,
    providerKey: process.env.PROVIDER_KEY ?? null, otherKey: process.env.OTHER_KEY ?? null } }));
});`;

let t: TestKernel;
let company: any;
let tool: string;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Tool Launch Co'));
  await installAndEnable(t, LAUNCHER);
  const dir = await mkdtemp(join(tmpdir(), 'keel-tool-'));
  await chmod(dir, 0o755);
  tool = join(dir, 'tool.cjs');
  await writeFile(tool, TOOL, { mode: 0o644 });
});
afterAll(async () => { await t?.stop(); });

const toolAgent = (launch: Record<string, unknown>, config: Record<string, unknown> = {}) =>
  createAgent(t.api, company.id, { adapterType: 'fixture_local', adapterConfig: { command: process.execPath, graceSec: 1, launch, ...config } });

async function ran(agentId: string, accept = (run: any) => run.status === 'succeeded' || run.status === 'failed') {
  const { run } = await wakeOk(t.api, agentId);
  return runWhen(t, run.id, (found) => accept(found) && found.finishedAt !== null);
}

describe('a tool launch', () => {
  it('runs the configured command with the plugin\'s arguments, the prompt on standard input, in the agent\'s persistent home', async () => {
    const agent = await toolAgent({
      args: [tool, '--write-home', 'kept between runs'], stdin: 'the prompt, never an argument',
      home: { variables: { TOOL_CONFIG: '.tool' }, files: [{ path: '.tool/skills/a/SKILL.md', content: '# skill a' }] }, env: { TOOL_FLAG: 'on' },
    });
    const first = await ran(agent.id);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    const result = first.resultJson;
    expect(result.args).toEqual(['--write-home', 'kept between runs']);
    expect(result.stdin).toBe('the prompt, never an argument');
    expect(result.home).toBe(join(t.dataDir, 'agent-homes', agent.id));
    expect([result.toolConfig, result.skill, result.flag, result.hasToken]).toEqual([join(result.home, '.tool'), '# skill a', 'on', true]);
    expect(result.tmp).not.toBe(result.home);
    // The home belongs to the agent user, and only to it.
    const info = await stat(result.home);
    expect([info.uid, info.mode & 0o777]).toEqual([result.uid, 0o700]);

    // The next run finds what the first left in the home; another agent's home is its own.
    await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { launch: { args: [tool], home: {} } } });
    const second = await ran(agent.id);
    expect([second.resultJson.home, second.resultJson.note]).toEqual([result.home, 'kept between runs']);
    const other = await toolAgent({ args: [tool], home: {} });
    const elsewhere = await ran(other.id);
    expect([elsewhere.resultJson.home, elsewhere.resultJson.note]).toEqual([join(t.dataDir, 'agent-homes', other.id), null]);
  });

  it('works in a folder of the home on every run when the agent names no cwd (the start\'s files written there by the agent user); a configured cwd wins', async () => {
    const agent = await toolAgent({ args: [tool], home: { workdir: 'workspace' }, files: [{ path: 'given.txt', content: 'for this run' }] });
    const first = await ran(agent.id);
    const folder = join(t.dataDir, 'agent-homes', agent.id, 'workspace');
    expect([first.status, first.resultJson.cwd, first.resultJson.given]).toEqual(['succeeded', folder, 'for this run']);
    expect((await stat(join(folder, 'given.txt'))).uid).toBe(first.resultJson.uid);
    expect((await ran(agent.id)).resultJson.cwd).toBe(folder);
    const elsewhere = await mkdtemp(join(tmpdir(), 'keel-cwd-'));
    await chmod(elsewhere, 0o777);
    await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { cwd: elsewhere } });
    expect((await ran(agent.id)).resultJson.cwd).toBe(elsewhere);
  });

  it('retries once with the fresh arguments when the tool refuses to resume, and the log says so', async () => {
    const agent = await toolAgent({ args: [tool, '--resume', 'gone-session'], retryOnce: { args: [tool, '--fresh'], ifOutputIncludes: ['No conversation found'] } });
    const run = await ran(agent.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.resultJson.args).toEqual(['--fresh']);
    const log = (await t.api.get(`/api/heartbeat-runs/${run.id}/log`)).body.content as string;
    expect(log).toContain('No conversation found with session ID: gone-session');
    expect(log).toContain('starting it once more with a fresh session');
    // The end tells the plugin the command ran twice (the fixture notes it in the run's transcript).
    const transcript = (await t.api.get(`/api/heartbeat-runs/${run.id}/transcript`)).body;
    expect(transcript.entries.map((entry: any) => entry.message)).toContain('attempts: 2');
  });

  it('does not retry a failure the substrings do not name', async () => {
    const agent = await toolAgent({ args: [tool, '--resume', 'x'], retryOnce: { args: [tool, '--fresh'], ifOutputIncludes: ['something else entirely'] } });
    const run = await ran(agent.id);
    expect([run.status, run.exitCode]).toEqual(['failed', 1]);
  });

  it('refuses variables that could change what the command runs, and the agent\'s own configured env wins over the plugin\'s tool variables', async () => {
    for (const name of ['PATH', 'LD_PRELOAD', 'NODE_OPTIONS', 'HOME']) {
      const agent = await toolAgent({ args: [tool], env: { [name]: '/tmp/evil' } });
      const run = await ran(agent.id);
      expect([run.status, run.errorCode], name).toEqual(['failed', 'invalid_arguments']);
    }
    const agent = await toolAgent({ args: [tool], env: { TOOL_FLAG: 'plugin' } }, { env: { TOOL_FLAG: 'board' } });
    expect((await ran(agent.id)).resultJson.flag).toBe('board');
  });

  it('a link the agent placed in its home cannot make the kernel write outside it', async () => {
    const target = await mkdtemp(join(tmpdir(), 'keel-victim-'));
    const agent = await toolAgent({ args: [tool, '--link-home', target, 'escape'], home: {} });
    expect((await ran(agent.id)).status).toBe('succeeded');
    expect((await lstat(join(t.dataDir, 'agent-homes', agent.id, 'escape'))).isSymbolicLink()).toBe(true);
    await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { launch: { args: [tool], home: { files: [{ path: 'escape/pwned.txt', content: 'x' }], replace: ['escape'] } } } });
    await ran(agent.id);
    // The agent user cannot write into a root-owned 0700 folder: nothing arrived there.
    expect(await readdir(target)).toEqual([]);
  });
});

describe('a tool launch for the model gateway', () => {
  const secret = async (value: string) => {
    const res = await t.api.post(`/api/companies/${company.id}/secrets`, { name: `KEY_${Math.random().toString(36).slice(2, 10)}`, value });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };

  it('hands the run token to its token variables, over the configured value and the plugin\'s, and SERVICE_LLM_URL names the gateway', async () => {
    const agent = await toolAgent({ args: [tool], tokenVariables: ['TOOL_API_KEY'], env: { TOOL_API_KEY: 'from-the-plugin' } }, { env: { TOOL_API_KEY: 'from-the-board' } });
    const run = await ran(agent.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.resultJson.toolKeyIsRunToken).toBe(true);
    expect(run.resultJson.llmUrl).toBe(`${run.resultJson.apiUrl}/api/llm`);
    // The plugin is told the same addresses.
    const urls = await t.api.get(`/api/plugins/tool-launcher/companies/${company.id}/callback-url`);
    expect(urls.status, urls.text).toBe(200);
    expect(urls.body).toEqual({ apiUrl: run.resultJson.apiUrl, llmUrl: run.resultJson.llmUrl });
    // Without tokenVariables the configured value stays.
    const plain = await toolAgent({ args: [tool] }, { env: { TOOL_API_KEY: 'from-the-board' } });
    expect((await ran(plain.id)).resultJson.toolKey).toBe('from-the-board');
  });

  it('withholds a configured secret reference: the process never gets it and the vault is not read for it', async () => {
    const provider = await secret('sk-provider-never-in-the-run');
    const other = await secret('other-value');
    const agent = await toolAgent({ args: [tool], withholdVariables: ['PROVIDER_KEY'] }, {
      env: { PROVIDER_KEY: { type: 'secret_ref', secretId: provider }, OTHER_KEY: { type: 'secret_ref', secretId: other } },
    });
    const run = await ran(agent.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.resultJson.providerKey).toBeNull();
    // The variable that is not withheld arrives (masked in the run's output, as every secret).
    expect(run.resultJson.otherKey).not.toBeNull();
    const audit = await t.sql.query(`select details from security_audit_log where run_id = $1 and event = 'secret.environment_resolved'`, [run.id]);
    expect(audit.rows.flatMap((row: any) => row.details.secrets.map((used: any) => used.envName))).toEqual(['OTHER_KEY']);
    expect(JSON.stringify(audit.rows)).not.toContain(provider);
    const log = (await t.api.get(`/api/heartbeat-runs/${run.id}/log`)).body.content as string;
    expect(log).not.toContain('sk-provider-never-in-the-run');
  });

  it('refuses a token variable that could change what runs or that is a SERVICE_* variable', async () => {
    for (const name of ['PATH', 'LD_PRELOAD', 'SERVICE_API_URL']) {
      const agent = await toolAgent({ args: [tool], tokenVariables: [name] });
      const run = await ran(agent.id);
      expect([run.status, run.errorCode], name).toEqual(['failed', 'invalid_arguments']);
    }
  });

  it('a process agent gets SERVICE_LLM_URL, canonical over a configured value', async () => {
    const script = join(tool, '..', 'llm-url.cjs');
    await writeFile(script, `console.log(JSON.stringify({ type: 'service.result', result: { apiUrl: process.env.SERVICE_API_URL, llmUrl: process.env.SERVICE_LLM_URL } }));`, { mode: 0o644 });
    const agent = await processAgent(t.api, company.id, script, { env: { SERVICE_LLM_URL: 'http://elsewhere.example' } });
    const run = await ran(agent.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.resultJson.llmUrl).toBe(`${run.resultJson.apiUrl}/api/llm`);
  });

  it('a probe with token variables runs with a token of a run opened for it, closed when it ends; its answer never shows the token', async () => {
    const provider = await secret('sk-probe-provider');
    const agent = await toolAgent({ args: [tool] }, { env: { PROVIDER_KEY: { type: 'secret_ref', secretId: provider } } });
    const res = await t.api.post(`/api/plugins/tool-launcher/companies/${company.id}/probe`, {
      agentId: agent.id, tokenVariables: ['TOOL_API_KEY'], withholdVariables: ['PROVIDER_KEY'],
      args: ['-e', 'fetch(process.env.SERVICE_API_URL + "/api/agents/me", { headers: { authorization: "Bearer " + process.env.TOOL_API_KEY } })'
        + '.then((r) => console.log(r.status, process.env.SERVICE_LLM_URL, process.env.PROVIDER_KEY ?? "withheld", process.env.TOOL_API_KEY))'],
    });
    expect(res.status, res.text).toBe(200);
    const [status, llmUrl, providerKey, shown] = res.body.stdout.trim().split(' ');
    expect([status, providerKey]).toEqual(['200', 'withheld']);
    expect(llmUrl).toMatch(/^http:\/\/.+\/api\/llm$/);
    expect(shown).not.toMatch(/^eyJ/);
    const runs = await t.sql.query(`select status, close_reason from runs where agent_id = $1 and invocation_source = 'adapter_test'`, [agent.id]);
    expect(runs.rows).toEqual([{ status: 'succeeded', close_reason: 'probe succeeded' }]);
    // Without token variables a probe has no run and no token.
    const plain = await t.api.post(`/api/plugins/tool-launcher/companies/${company.id}/probe`, { agentId: agent.id, args: ['-e', 'console.log(String(Boolean(process.env.TOOL_API_KEY)), process.env.PROVIDER_KEY === undefined)'] });
    expect(plain.body.stdout.trim()).toBe('false false');
    expect((await t.sql.query(`select count(*)::int as n from runs where agent_id = $1`, [agent.id])).rows[0].n).toBe(1);
  });
});

describe('the fields of a tool launch', () => {
  it('are refused for a process agent, whose command and arguments are its configuration\'s (the probe too)', async () => {
    const agent = await processAgent(t.api, company.id, tool);
    const probe = await t.api.post(`/api/plugins/tool-launcher/companies/${company.id}/probe`, { agentId: agent.id, args: ['-e', 'console.log(1)'] });
    expect([probe.status, probe.body.code]).toEqual([409, 'adapter_mismatch']);
  });
});

describe('a probe', () => {
  it('runs the configured command once, without a run token, and answers its output', async () => {
    const agent = await toolAgent({ args: [tool] });
    const res = await t.api.post(`/api/plugins/tool-launcher/companies/${company.id}/probe`, {
      agentId: agent.id, args: ['-e', 'process.stdin.pipe(process.stdout); console.error(String(Boolean(process.env.SERVICE_API_KEY)) + " " + process.env.HOME)'], stdin: 'ping',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ exitCode: 0, timedOut: false, spawnError: null });
    expect(res.body.stdout.trim()).toBe('ping');
    expect(res.body.stderr.trim()).toBe(`false ${join(t.dataDir, 'agent-homes', agent.id)}`);
  });

  it('says when the command is missing', async () => {
    const agent = await toolAgent({ args: [] }, { command: '/nonexistent/tool' });
    const res = await t.api.post(`/api/plugins/tool-launcher/companies/${company.id}/probe`, { agentId: agent.id, args: ['--version'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.spawnError).toBe('ENOENT');
  });
});
