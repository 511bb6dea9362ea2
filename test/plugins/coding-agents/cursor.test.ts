import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { runWhen, startRuntimeWorld, wakeOk } from '../runtime/helpers.ts';

/**
 * The `cursor` adapter through a running Keel. Cursor's CLI cannot be installed here, so the
 * command is a STAND-IN that prints the stream of Cursor's documentation
 * (test/fixtures/coding-agents/cursor/documented-example.stdout.jsonl) and a result with usage in
 * the shape users report; it answers, as its result's text, the arguments it was given and
 * whether the prompt came on standard input. This checks Keel's side (launch, transcript, usage,
 * session, classification), not the real tool.
 */
const DOCUMENTED = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'cursor', 'documented-example.stdout.jsonl'), 'utf8');
const SESSION = 'c6b62c6f-7ead-4fd6-9922-e952131177ff';
const STAND_IN = `#!/usr/bin/env node
const lines = ${JSON.stringify(DOCUMENTED.trim().split('\n').slice(0, -1))};
let stdin = ''; process.stdin.on('data', (d) => { stdin += d; }); process.stdin.on('end', () => {
  if (process.argv.includes('--version')) { console.log('2026.09.02-c22c1a3'); return; }
  if (!process.env.CURSOR_API_KEY) { console.error("Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable."); process.exit(1); }
  for (const line of lines) console.log(line);
  const result = JSON.stringify({ args: process.argv.slice(2), prompt: stdin.includes('## Working with Keel'), instructions: stdin.startsWith('<agent-instructions>') });
  console.log(JSON.stringify({ type: 'result', subtype: 'success', duration_ms: 5234, duration_api_ms: 5234, is_error: false, result, session_id: '${SESSION}',
    usage: { inputTokens: 229382, outputTokens: 10147, cacheReadTokens: 2158080, cacheWriteTokens: 0 } }));
});
`;

let t: TestKernel;
let company: any;
let standIn: string;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Cursor Co'));
  const dir = await mkdtemp(join(tmpdir(), 'keel-cursor-'));
  await chmod(dir, 0o755);
  standIn = join(dir, 'cursor-agent');
  await writeFile(standIn, STAND_IN, { mode: 0o755 });
});
afterAll(async () => { await t?.stop(); });

const ended = (run: any) => ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(run.status) && run.finishedAt !== null;
const cursorAgent = (config: Record<string, unknown> = {}) => createAgent(t.api, company.id, {
  adapterType: 'cursor', adapterConfig: { command: standIn, env: { CURSOR_API_KEY: 'key' }, graceSec: 1, ...config },
});

describe('a cursor agent (a stand-in printing Cursor\'s documented stream)', () => {
  it('is started in print mode, unattended, with the prompt on stdin; its stream becomes the transcript, its usage a cost event, its chat resumed next time', async () => {
    const agent = await cursorAgent();
    expect(agent.adapterConfig).toMatchObject({ model: 'auto', command: standIn });
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Summarise the README' })).body;
    const first = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, ended, 60_000);
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'succeeded', resultJson: { sessionId: SESSION, isError: false, subtype: 'success', durationMs: 5234 } });
    expect(JSON.parse(first.resultJson.result)).toEqual({ args: ['-p', '--output-format', 'stream-json', '--force', '--trust', '--model', 'auto'], prompt: true, instructions: false });

    const entries = (await t.api.get(`/api/heartbeat-runs/${first.id}/transcript`)).body.entries as any[];
    expect(entries.map((entry) => entry.kind)).toEqual(['init', 'assistant', 'tool_call', 'tool_result', 'assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(entries[2]).toMatchObject({ name: 'read', input: { path: 'README.md' } });
    const { rows } = await t.sql.query('select provider, model, input_tokens, cached_input_tokens, output_tokens from plugin_costs.cost_events where heartbeat_run_id = $1', [first.id]);
    expect(rows).toEqual([{ provider: 'cursor', model: 'auto', input_tokens: '229382', cached_input_tokens: '2158080', output_tokens: '10147' }]);

    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id, ended, 60_000);
    expect(second).toMatchObject({ status: 'succeeded', sessionIdBefore: SESSION });
    expect(JSON.parse(second.resultJson.result).args.at(-1)).toBe(`--resume=${SESSION}`);
  });

  it('fails as needing authentication when the CLI asks for a login', async () => {
    const agent = await cursorAgent({ env: {} });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, ended, 60_000);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'tool_auth_required' });
  });

  it('refuses an extra flag that would carry a credential, naming it', async () => {
    const res = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Keyed', adapterType: 'cursor', adapterConfig: { command: standIn, extraArgs: ['--api-key', 'k'] } });
    expect([res.status, res.body.code, res.body.details?.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.extraArgs.0']);
    expect(res.body.error).toContain('--mode, --add-dir, --approve-mcps');
    // Nothing was written.
    const agents = (await t.api.get(`/api/companies/${company.id}/agents`)).body as any[];
    expect(agents.map((agent) => agent.name)).not.toContain('Keyed');
  });

  it('fails as not installed, naming Cursor\'s installer, when its command is missing', async () => {
    const agent = await cursorAgent({ command: '/nonexistent/bin/cursor-agent' });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, ended, 60_000);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'adapter_unavailable' });
    expect((await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body.lastError).toContain('curl https://cursor.com/install -fsS | bash');
  });
});
