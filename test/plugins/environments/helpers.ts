import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { grant } from '../skill-policy/helpers.ts';

/** Shared steps of the environments plugin's tests (all through HTTP). */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

/**
 * A kernel with the first-party plugins and two companies, each with a folder an operator
 * mounted for the environments plugin (`<base>/a`, `<base>/b`), an agent holding
 * environments:manage (managerApi), one without (plainApi), and an agent of the other company
 * (outsiderApi). The base is traversable so that git, run as the agent user, can read repositories.
 */
export async function startEnvironmentsWorld() {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'keel-envs-')));
  await chmod(base, 0o755);
  const t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  const company = await createCompany(t.api, { name: 'Environments Co' });
  const other = await createCompany(t.api, { name: 'Other Environments Co' });
  const mountA = await mount(t, base, company.id, 'a');
  const mountB = await mount(t, base, other.id, 'b');
  const manager = await createAgent(t.api, company.id, { name: 'Operator' });
  await grant(t, company.id, 'agent', manager.id, 'environments:manage');
  const managerApi = t.api.as(await createAgentKey(t.api, manager.id));
  const plainApi = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, company.id, { name: 'Worker' })).id));
  const outsiderApi = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
  return {
    t, base, company, other, mountA, mountB, managerApi, plainApi, outsiderApi,
    async stop() {
      await t.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}

async function mount(t: TestKernel, base: string, companyId: string, name: string): Promise<string> {
  const dir = join(base, name);
  await mkdir(dir, { mode: 0o755 });
  await mountWorkspacesFolder(t, companyId, dir);
  return dir;
}

/** Mounts `dir` (made traversable) as the company's `workspaces` folder of the environments plugin, as an operator would. */
export async function mountWorkspacesFolder(t: TestKernel, companyId: string, dir: string): Promise<void> {
  await chmod(dir, 0o755);
  const res = await t.api.put(`/api/plugins/environments/companies/${companyId}/local-folders/workspaces`, { path: dir });
  expect(res.status, res.text).toBeLessThan(300);
}

export async function createEnvironment(api: Api, companyId: string, body: Record<string, unknown>) {
  const res = await api.post(`/api/companies/${companyId}/environments`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function acquire(api: Api, environmentId: string, body: Record<string, unknown> = {}) {
  const res = await api.post(`/api/environments/${environmentId}/leases`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A git repository with one commit, readable by other users. */
export async function gitRepository(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=T', ...args], { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  execFileSync('sh', ['-c', 'echo hello > README.md'], { cwd: dir });
  git('add', 'README.md');
  git('commit', '-q', '-m', 'first');
  execFileSync('chmod', ['-R', 'a+rX', dir]);
}

export async function count(t: TestKernel, table: string): Promise<number> {
  return (await t.sql.query(`select count(*)::int as n from plugin_environments.${table}`)).rows[0].n;
}
