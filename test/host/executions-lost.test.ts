import { chmod, copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { createApi, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { alive, processesOfRun } from '../support/processes.ts';
import { startServer, stopServer, type ServerProcess } from '../support/server-process.ts';

/**
 * A Keel process killed with SIGKILL while an agent runs: the next start of a Keel process on
 * the same data directory finds the execution, marks it lost, closes its run (token revoked,
 * run.closed written), tells the starting plugin, and kills the process group left behind.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/exec-fx', import.meta.url));
const KEY = 'exec-fx';
let t: TestKernel;
let home: string;
const servers: ServerProcess[] = [];


async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function startChild(): ServerProcess {
  const server = startServer({ home, entry: 'test/support/kernel-child.ts', env: { DATABASE_URL: t.databaseUrl } });
  servers.push(server);
  return server;
}

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
  home = await mkdtemp(join(tmpdir(), 'keel-exec-lost-'));
  // The same keys as the first process, as every process on one database has.
  for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(t.dataDir, file), join(home, file)).catch(() => undefined);
});
afterAll(async () => {
  for (const server of servers) await stopServer(server, 'SIGKILL');
  await t?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('a Keel process killed during a run', () => {
  it('leaves an execution that the next start marks lost, closing its run and killing the orphaned process group', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-agent-script-'));
    await chmod(dir, 0o755);
    const script = join(dir, 'agent.cjs');
    await writeFile(script, `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      process.stdout.write(JSON.stringify({ type: 'child', pid: child.pid }) + '\\n');
      setInterval(() => {}, 1000);
    `, { mode: 0o644 });
    const companyId = (await createCompany(t.api, { name: 'Lost Co' })).id;
    const agent = await createAgent(t.api, companyId, { adapterType: 'process', adapterConfig: { command: process.execPath, args: [script] } });

    const first = startChild();
    const api = createApi(await first.listening);
    // Through the child's URL, so the child owns the execution (once its worker serves the plugin).
    const started = await waitFor(async () => {
      const res = await api.post(`/api/plugins/${KEY}/companies/${companyId}/start`, { agentId: agent.id, execution: { kind: 'process' } });
      return res.status === 200 ? res.body : undefined;
    }, 'the child to serve the plugin');
    const executionId = started.execution.executionId as string;
    const owned = (await t.sql.query('select owner_instance, owner_node from executions where id = $1', [executionId])).rows[0];
    expect(owned.owner_instance).not.toBe(t.kernel.services.executions.instanceId);
    await waitFor(async () => (await t.sql.query("select payload from plugin_execfx.received where execution_id = $1 and name = 'execution.output'", [executionId])).rows[0]?.payload.outputs[0].data.pid as number, 'the agent to report its child');
    // unshare, the namespace's shell, the agent and its child.
    const group = processesOfRun(started.runId);
    expect(group).toHaveLength(4);
    const agentPid = (await t.sql.query('select pid from executions where id = $1', [executionId])).rows[0].pid as number;
    expect(group).toContain(agentPid);
    const token = await waitFor(async () => (await t.sql.query("select status from executions where id = $1 and status = 'running'", [executionId])).rowCount, 'running');
    expect(token).toBe(1);

    await stopServer(first, 'SIGKILL');
    // Detached in its own group, the agent outlives the process that supervised it.
    expect(group.filter(alive)).toEqual(group);
    expect((await t.sql.query('select status from executions where id = $1', [executionId])).rows[0].status).toBe('running');

    const second = startChild();
    await second.listening;
    const lost = (await t.sql.query('select status, error_code, finished_at from executions where id = $1', [executionId])).rows[0];
    expect(lost).toMatchObject({ status: 'lost', error_code: 'lost' });
    const run = (await t.sql.query('select status, close_reason from runs where id = $1', [started.runId])).rows[0];
    expect(run).toEqual({ status: 'failed', close_reason: 'lost' });
    expect((await t.sql.query("select count(*)::int as n from keel_events.outbox where name = 'run.closed' and entity_id = $1", [started.runId])).rows[0].n).toBe(1);
    const finished = await waitFor(async () => (await t.sql.query("select payload from plugin_execfx.received where execution_id = $1 and name = 'execution.finished'", [executionId])).rows[0]?.payload, 'execution.finished');
    expect(finished).toMatchObject({ executionId, runId: started.runId, status: 'lost', errorCode: 'lost' });
    await waitFor(async () => !group.some(alive), 'the orphaned group to be killed', 5_000);
  }, 120_000);
});
