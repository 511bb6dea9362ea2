import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, type Api } from '../support/harness.ts';
import { eventually, startServer, stopServer, workerPids, type ServerProcess } from '../support/server-process.ts';
import { createRestrictedDatabase, type RestrictedDatabase } from '../support/restricted-database.ts';

/**
 * Keel as deployed behind a round-robin: several `kernel/main.ts` processes, each with its own
 * data directory, sharing one external PostgreSQL through a role that is not a superuser (as
 * managed services grant), and the agent JWT secret and vault master key.
 */
const shared = { KEEL_AGENT_JWT_SECRET: randomBytes(32).toString('hex'), KEEL_SECRETS_MASTER_KEY: randomBytes(32).toString('hex') };
const homes: string[] = [];
const processes: ServerProcess[] = [];
const databases: RestrictedDatabase[] = [];

async function startProcess(databaseUrl: string): Promise<ServerProcess> {
  const home = await mkdtemp(join(tmpdir(), 'keel-multi-'));
  homes.push(home);
  const started = startServer({ home, env: { ...shared, DATABASE_URL: databaseUrl } });
  processes.push(started);
  return started;
}

afterAll(async () => {
  await Promise.all(processes.map((p) => stopServer(p, 'SIGKILL')));
  for (const database of databases) await database.drop();
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

const summary = (api: Api, companyId: string) => api.get(`/api/companies/${companyId}/costs/summary`);

describe('three processes started at once on one database through a role without superuser', () => {
  let kernels: Array<{ process: ServerProcess; api: Api }>;
  let database: RestrictedDatabase;

  beforeAll(async () => {
    database = await createRestrictedDatabase();
    databases.push(database);
    const started = await Promise.all([0, 1, 2].map(() => startProcess(database.url)));
    const urls = await Promise.all(started.map((p) => p.listening));
    kernels = started.map((process, i) => ({ process, api: createApi(urls[i]!) }));
  }, 180_000);

  /**
   * Each process serves the costs routes and runs its first-party plugins once: its worker
   * processes (besides its idle standby) are exactly the shared ones its plugins report, costs
   * in one of them.
   */
  async function expectEachServesCostsWithOneWorker(companyId: string): Promise<void> {
    for (const { process, api } of kernels) {
      const served = await eventually(() => summary(api, companyId), (r) => r.status === 200, 30_000);
      expect(served.status, served.text).toBe(200);
      const reported = async () => {
        const plugins = (await api.get('/api/plugins')).body as Array<{ pluginKey: string; status: string }>;
        const workers = await Promise.all(plugins.filter((p) => p.status === 'enabled').map(async (p) => (await api.get(`/api/plugins/${p.pluginKey}/health`)).body.worker as { pid: number | null }));
        return [...new Set(workers.map((w) => w.pid))].sort();
      };
      const serving = async () => {
        const standby = (await api.get('/api/plugins/costs/health')).body.worker.standbyPid as number | null;
        return (await workerPids(process.child.pid!)).filter((pid) => pid !== standby).sort();
      };
      const expected = await eventually(reported, (pids) => !pids.includes(null));
      expect(expected).toContain((await api.get('/api/plugins/costs/health')).body.worker.pid);
      expect(await eventually(serving, (pids) => pids.join() === expected.join())).toEqual(expected);
    }
  }

  it('all start, each serving the first-party costs plugin from its shared workers', async () => {
    const company = (await kernels[0]!.api.post('/api/companies', { name: 'Started together' })).body;
    await expectEachServesCostsWithOneWorker(company.id);
    const { rows } = await database.asSuperuser("select status, last_error from plugins where key = 'costs'");
    expect(rows).toEqual([{ status: 'enabled', last_error: null }]);
    // The first-party bootstrap ran once: one install, one enable.
    const { rows: activity } = await database.asSuperuser("select action from activity_log where entity_type = 'plugin' and entity_id = 'costs' order by seq");
    expect(activity.map((r) => r.action)).toEqual(['plugin.installed', 'plugin.enabled']);
  });

  it('plugin SQL runs for all three: cost events through each leave exact totals', async () => {
    const [a, b, c] = kernels.map((k) => k.api) as [Api, Api, Api];
    const company = (await a.post('/api/companies', { name: 'Spend', budgetMonthlyCents: 1_000_000 })).body;
    const agent = (await b.post(`/api/companies/${company.id}/agents`, { name: 'Spender', role: 'engineer' })).body;
    const agentId = agent.agent?.id ?? agent.id;
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => [a, b, c][i % 3]!.post(`/api/companies/${company.id}/cost-events`,
      { agentId, provider: 'alpha', model: 'alpha-large', costCents: i + 1, occurredAt: new Date().toISOString() })));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(201));
    for (const api of [a, b, c]) expect((await summary(api, company.id)).body.spendCents).toBe(465);
  });

  it('a plugin disabled through one process and enabled through another is served again by all, one worker each', async () => {
    const [a, b, c] = kernels.map((k) => k.api) as [Api, Api, Api];
    const company = (await a.post('/api/companies', { name: 'Toggled' })).body;
    // Enabling re-provisions the plugin's roles and grants in every process at once: repeated,
    // so that processes racing on the same catalog rows would show.
    for (const [off, on] of [[a, b], [b, c], [c, a]] as Array<[Api, Api]>) {
      const disabled = await off.post('/api/plugins/costs/disable', {});
      expect(disabled.status, disabled.text).toBe(200);
      for (const api of [a, b, c]) expect((await eventually(() => summary(api, company.id), (r) => r.status === 404)).status).toBe(404);
      const enabled = await on.post('/api/plugins/costs/enable', {});
      expect(enabled.status, enabled.text).toBe(200);
      await expectEachServesCostsWithOneWorker(company.id);
    }
    const { rows } = await database.asSuperuser("select status from plugins where key = 'costs'");
    expect(rows).toEqual([{ status: 'enabled' }]);
    // Nothing went wrong on the way, not even a failure that a retry then made good.
    for (const { process } of kernels) expect(process.output()).not.toMatch(/"level":(50|60)/);
  }, 180_000);
});

describe('a start that fails', () => {
  it('exits non-zero with the reason, releasing the database (a role that cannot create plugin roles)', async () => {
    const database = await createRestrictedDatabase({ createRole: false });
    databases.push(database);
    const started = await startProcess(database.url);
    const outcome = await Promise.race([started.exited, new Promise((resolve) => setTimeout(() => resolve('still running after 90 s'), 90_000))]);
    expect(outcome, started.output()).not.toBe('still running after 90 s');
    expect(outcome).not.toBe(0);
    expect(started.output()).toMatch(/Keel could not start: .*permission denied to create role .*needs CREATEROLE/);
    // Nothing of the process stays connected. A server backend ends just after its client's
    // socket closes, not with it: wait for that, bounded (a session that a surviving child
    // process held would stay).
    const connected = async () => (await database.asSuperuser('select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows[0].n as number;
    expect(await eventually(connected, (n) => n === 0, 10_000)).toBe(0);
  }, 120_000);
});
