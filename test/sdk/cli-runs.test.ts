import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentScripts, processAgent, runWhen } from '../plugins/runtime/helpers.ts';
import { runCli } from './cli-support.ts';

/**
 * The runtime and agent-skill commands of `keel` against a running kernel with the runtime
 * plugin: wakes, runs (list, show, log, follow, cancel), runtime state, sessions, the vendor
 * login refusal, and desired skills.
 */
let t: TestKernel;
let company: any;
let scripts: string;

const keel = (...args: string[]) => runCli([...args, '--api-base', t.url]);
const json = (result: { code: number | null; stdout: string; stderr: string }) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

beforeAll(async () => {
  scripts = await agentScripts();
  // Prints a line, waits, prints on both streams, exits with the code it is given.
  await writeFile(join(scripts, 'talker.cjs'), `console.log('first line'); setTimeout(() => { console.error('a warning'); console.log('last line'); process.exit(Number(process.env.EXIT_CODE || 0)); }, 1500);`, { mode: 0o644 });
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Runs Co' });
});
afterAll(async () => { await t?.stop(); });

describe('runs', { timeout: 120_000 }, () => {
  it('wakes an agent by shortname and follows its log until it succeeds', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'talker.cjs'), { timeoutSec: 60 }, { name: 'Talker' });
    const woken = json(await keel('agent', 'wake', 'talker', '-C', company.id, '--reason', 'say something', '--idempotency-key', 'cli-1', '--json'));
    expect(woken).toMatchObject({ status: 'queued', wakeup: { source: 'on_demand', reason: 'say something', idempotencyKey: 'cli-1' }, run: { agentId: agent.id } });
    const followed = await keel('run', 'follow', woken.run.id, '--interval', '0.2');
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toContain('first line\n');
    expect(followed.stdout).toContain('[stderr] a warning\n');
    expect(followed.stdout.indexOf('first line')).toBeLessThan(followed.stdout.indexOf('last line'));
    expect(followed.stderr).toBe(`Run ${woken.run.id} succeeded, exit code 0\n`);

    const shown = json(await keel('run', 'show', woken.run.id, '--json'));
    expect(shown).toMatchObject({ id: woken.run.id, status: 'succeeded', exitCode: 0 });
    const log = await keel('run', 'log', woken.run.id, '--json');
    const entries = log.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(entries.filter((e) => e.stream === 'stdout').map((e) => e.line)).toEqual(['first line', 'last line']);
    expect(entries[0]).toEqual({ event: 'log', seq: expect.any(Number), at: expect.any(String), stream: expect.any(String), line: expect.any(String) });

    const page = json(await keel('run', 'list', '-C', company.id, '--agent', 'talker', '--json'));
    expect(page).toEqual({ runs: [expect.objectContaining({ id: woken.run.id })], nextCursor: null });
    const table = await keel('run', 'list', '-C', company.id);
    expect(table.stdout).toMatch(/^ID\s+AGENT_ID\s+STATUS\s+INVOCATION_SOURCE\s+STARTED_AT\s+FINISHED_AT\s+LOG_BYTES\n/);
    expect(table.stdout).toContain(woken.run.id);

    const again = json(await keel('agent', 'wake', agent.id, '--idempotency-key', 'cli-1', '--json'));
    expect(again.run.id).toBe(woken.run.id);

    const state = json(await keel('agent', 'runtime-state', agent.id, '--json'));
    expect(state).toMatchObject({ agentId: agent.id, lastRunId: woken.run.id, lastRunStatus: 'succeeded', totals: expect.objectContaining({ runs: 1, succeededRuns: 1 }) });
    expect(json(await keel('agent', 'task-sessions', agent.id, '--json'))).toEqual(expect.any(Array));
    const reset = json(await keel('agent', 'runtime-state:reset-session', agent.id, '--task-key', 'default', '--json'));
    expect(reset).toMatchObject({ agentId: agent.id, taskKey: 'default' });
  });

  it('follows a failing run with --json and exits 1', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'talker.cjs'), { timeoutSec: 60, env: { EXIT_CODE: '3' } });
    const woken = json(await keel('agent', 'heartbeat:invoke', agent.id, '--json'));
    expect(woken).toMatchObject({ status: 'queued', wakeup: { source: 'timer', triggerDetail: 'manual' } });
    const followed = await keel('run', 'follow', woken.run.id, '--interval', '0.2', '--json');
    expect(followed.code).toBe(1);
    const events = followed.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(events.filter((e) => e.event === 'log' && e.stream === 'stdout').map((e) => e.line)).toEqual(['first line', 'last line']);
    expect(events.at(-1)).toEqual({ event: 'end', run: expect.objectContaining({ id: woken.run.id, status: 'failed', exitCode: 3 }) });
  });

  it('cancels a run, and refuses a vendor login the adapter does not have', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { timeoutSec: 60 });
    const woken = json(await keel('agent', 'wake', agent.id, '--json'));
    await runWhen(t, woken.run.id, (run) => run.status === 'running');
    const cancelled = await keel('run', 'cancel', woken.run.id);
    expect(cancelled).toMatchObject({ code: 0, stdout: `Run ${woken.run.id} is cancelled\n` });
    // Cancelling again answers the same run (docs/api/runtime.md).
    expect(json(await keel('run', 'cancel', woken.run.id, '--json'))).toMatchObject({ id: woken.run.id, status: 'cancelled', cancelReason: 'cancelled_by_request' });
    const login = await keel('agent', 'claude-login', agent.id, '--json');
    expect(login.code).toBe(1);
    expect(JSON.parse(login.stderr)).toMatchObject({ code: 'login_not_supported', status: 422 });
  });
});

describe('agent skills', { timeout: 120_000 }, () => {
  it('shows the snapshot and syncs the desired skills', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { name: 'Skilled' });
    expect((await t.api.post(`/api/companies/${company.id}/skills/install-catalog`, { catalogSkillId: 'issue-triage' })).status).toBe(201);
    const synced = json(await keel('agent', 'skills:sync', 'skilled', '-C', company.id, '--desired-skills', 'issue-triage', '--json'));
    expect(synced.desiredSkills).toEqual(expect.arrayContaining(['keel/catalog/issue-triage']));
    const snapshot = json(await keel('agent', 'skills', agent.id, '--json'));
    expect(snapshot.entries.find((e: any) => e.key === 'keel/catalog/issue-triage')).toMatchObject({ desired: true });
    const table = await keel('agent', 'skills', agent.id);
    expect(table.stdout).toMatch(/^KEY\s+DESIRED\s+STATE\s+ORIGIN\s+REQUIRED\n/);
    const unknown = await keel('agent', 'skills:sync', agent.id, '--desired-skills', 'ghost-skill');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('invalid_skill_selection');
  });
});
