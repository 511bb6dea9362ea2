import { existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createCompany } from '../../support/fixtures.ts';
import { createApi, FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { startServer, stopServer, type ServerProcess } from '../../support/server-process.ts';
import { agentScripts, alive, processAgent, runWhen, waitFor } from './helpers.ts';

/**
 * A Keel process killed with SIGKILL while it runs an agent for the runtime: after a Keel
 * process starts again on its data directory, the run is `lost`, its ledger run closed (the
 * token revoked), the issue it checked out released, and the agent's process gone.
 */
let t: TestKernel;
let home: string;
let tokens: string;
let scripts: string;
const servers: ServerProcess[] = [];

function startChild(): ServerProcess {
  const server = startServer({ home, entry: 'test/support/kernel-child.ts', env: { DATABASE_URL: t.databaseUrl, KEEL_TEST_FIRST_PARTY_DIR: FIRST_PARTY_PLUGINS } });
  servers.push(server);
  return server;
}

beforeAll(async () => {
  scripts = await agentScripts();
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  home = await mkdtemp(join(tmpdir(), 'keel-runtime-lost-'));
  for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(t.dataDir, file), join(home, file)).catch(() => undefined);
  // The agent (another user) leaves its token here for the test to try after the run.
  tokens = await mkdtemp(join(tmpdir(), 'keel-runtime-tokens-'));
  await chmod(tokens, 0o777);
});
afterAll(async () => {
  for (const server of servers) await stopServer(server, 'SIGKILL');
  await t?.stop();
  for (const dir of [home, tokens]) if (dir) await rm(dir, { recursive: true, force: true });
});

it('ends the run lost after a restart: ledger run closed, token revoked, checkout released, process gone', async () => {
  const company = await createCompany(t.api, { name: 'Lost Runs Co' });
  const tokenFile = join(tokens, 'token');
  const agent = await processAgent(t.api, company.id, join(scripts, 'checkout-hang.cjs'), { env: { TOKEN_FILE: tokenFile } });
  const first = startChild();
  const childApi = createApi(await first.listening);

  // Both processes take start jobs: wake until the child is the one that runs the agent (on a loaded
  // machine the parent, which polls the job queue too, may win many times in a row).
  let run: any;
  let issue: any;
  for (let attempt = 0; attempt < 30 && !run; attempt++) {
    issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: `Lost work ${attempt}` })).body;
    const woken = await waitFor(async () => {
      const res = await childApi.post(`/api/agents/${agent.id}/wakeup`, { payload: { issueId: issue.id } });
      return res.status === 202 ? res.body : undefined;
    }, 'the child to serve the runtime');
    const running = await runWhen(t, woken.run.id, (r) => r.status === 'running' && r.executionId);
    const { rows } = await t.sql.query('select owner_instance from executions where id = $1', [running.executionId]);
    if (rows[0].owner_instance !== t.kernel.services.executions.instanceId) { run = running; break; }
    await t.api.post(`/api/heartbeat-runs/${running.id}/cancel`);
    await runWhen(t, running.id);
  }
  expect(run, 'the child never ran the agent').toBeTruthy();
  await waitFor(async () => existsSync(tokenFile) && (await t.api.get(`/api/issues/${issue.id}`)).body.checkoutRunId === run.id, 'the agent to check out its issue');
  const token = readFileSync(tokenFile, 'utf8');
  expect((await t.api.get('/api/agents/me', { token })).status).toBe(200);

  const { rows: [{ pid }] } = await t.sql.query('select pid from executions where id = $1', [run.executionId]);
  await stopServer(first, 'SIGKILL');
  // Detached in its own group, the agent outlives the process that supervised it.
  expect(alive(pid)).toBe(true);
  const second = startChild();
  await second.listening;

  const lost = await runWhen(t, run.id);
  expect(lost).toMatchObject({ status: 'lost', errorCode: 'lost' });
  const { rows: ledger } = await t.sql.query('select status, close_reason from runs where id = $1', [run.id]);
  expect(ledger).toEqual([{ status: 'failed', close_reason: 'lost' }]);
  expect((await t.api.get('/api/agents/me', { token })).status).toBe(401);
  await eventsSettled(t);
  expect((await t.api.get(`/api/issues/${issue.id}`)).body.checkoutRunId).toBeNull();
  await waitFor(async () => !alive(pid), 'the orphaned agent process to be killed', 10_000);
}, 180_000);
