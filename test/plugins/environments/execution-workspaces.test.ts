import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { acquire, count, createEnvironment, gitRepository, ISO, startEnvironmentsWorld, UNKNOWN_ID } from './helpers.ts';

/** Execution workspaces: a project's working copy (its primary workspace or a git worktree), close readiness, operations. */
let world: Awaited<ReturnType<typeof startEnvironmentsWorld>>;
let t: TestKernel;
let company: any;
let mountA: string;
let managerApi: Api;
let plainApi: Api;
let outsiderApi: Api;
let project: any;
let primary: any;

beforeAll(async () => {
  world = await startEnvironmentsWorld();
  ({ t, company, mountA, managerApi, plainApi, outsiderApi } = world);
  await gitRepository(join(mountA, 'app'));
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'App' })).body;
  const res = await t.api.post(`/api/projects/${project.id}/workspaces`, { name: 'main', cwd: join(mountA, 'app'), repoUrl: 'https://git.example.com/acme/app', repoRef: 'main' });
  expect(res.status, res.text).toBe(201);
  primary = res.body;
});
afterAll(async () => { await world?.stop(); });

const list = `/api/companies/${'{companyId}'}/execution-workspaces`;
const wsPath = (companyId: string) => list.replace('{companyId}', companyId);
async function create(body: Record<string, unknown>, api: Api = t.api) {
  const res = await api.post(wsPath(company.id), body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
/** A git worktree of the project's repository at `<mount>/worktrees/<name>` on a new branch. */
function worktree(name: string): string {
  const dir = join(mountA, 'worktrees', name);
  execFileSync('git', ['worktree', 'add', '-q', '-b', `feature/${name}`, dir], { cwd: join(mountA, 'app'), stdio: 'pipe' });
  execFileSync('chmod', ['-R', 'a+rX', join(mountA, 'worktrees'), join(mountA, 'app', '.git')]);
  return dir;
}

describe('execution workspaces', () => {
  it('makes one from the project primary, reads and lists it, with a recorded operation', async () => {
    const ws = await create({ projectWorkspaceId: primary.id }, managerApi);
    expect(ws).toEqual({
      id: expect.any(String), companyId: company.id, projectId: project.id, projectWorkspaceId: primary.id, environmentId: null, sourceIssueId: null,
      name: 'main', mode: 'project_primary', status: 'active', cwd: join(mountA, 'app'), repoUrl: 'https://git.example.com/acme/app', baseRef: 'main',
      branch: null, metadata: null, runtimeServices: [], workspaceCommands: [], closedAt: null, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body).toEqual(ws);
    expect((await plainApi.get(wsPath(company.id))).body.map((w: any) => w.id)).toContain(ws.id);
    expect((await t.api.get(`${wsPath(company.id)}?projectWorkspaceId=${primary.id}&status=active`)).body.map((w: any) => w.id)).toContain(ws.id);
    expect((await t.api.get(`${wsPath(company.id)}?status=closed`)).body.map((w: any) => w.id)).not.toContain(ws.id);
    const ops = await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations`);
    expect(ops.status, ops.text).toBe(200);
    expect(ops.body).toEqual([{
      id: expect.any(String), companyId: company.id, executionWorkspaceId: ws.id, kind: 'create', action: null, status: 'succeeded',
      message: 'Created (project_primary)', details: { mode: 'project_primary', projectWorkspaceId: primary.id }, actorType: 'agent',
      actorId: expect.any(String), executionId: null, createdAt: expect.stringMatching(ISO), finishedAt: null,
    }]);
    const readiness = await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`);
    expect(readiness.body).toMatchObject({ executionWorkspaceId: ws.id, ready: true, git: null, checks: [{ key: 'no_active_leases', status: 'passed' }, { key: 'no_running_services', status: 'passed' }, { key: 'git_clean', status: 'skipped' }] });
  });

  it('refuses to close a git worktree over uncommitted changes, and closes it once clean', async () => {
    const dir = worktree('close');
    const ws = await create({ projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: dir, branch: 'feature/close', name: 'close' });
    expect(ws).toMatchObject({ mode: 'git_worktree', cwd: dir, branch: 'feature/close', baseRef: 'main' });
    const clean = await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`);
    expect(clean.status, clean.text).toBe(200);
    expect(clean.body).toMatchObject({ ready: true, git: { repository: true, branch: 'feature/close', clean: true, changedFiles: 0 } });

    await writeFile(join(dir, 'notes.txt'), 'work in progress');
    await writeFile(join(dir, 'README.md'), 'changed');
    const dirty = await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`);
    expect(dirty.body).toMatchObject({ ready: false, git: { clean: false, changedFiles: 2 } });
    expect(dirty.body.checks[2]).toMatchObject({ key: 'git_clean', status: 'failed', message: '2 path(s) have uncommitted changes', details: { sample: [' M README.md', '?? notes.txt'] } });
    const refused = await t.api.patch(`/api/execution-workspaces/${ws.id}`, { status: 'closed' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'workspace_not_ready_to_close', details: { readiness: { ready: false } } });
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body.status).toBe('active');

    await rm(join(dir, 'notes.txt'));
    execFileSync('git', ['checkout', '-q', '--', 'README.md'], { cwd: dir });
    const closed = await t.api.patch(`/api/execution-workspaces/${ws.id}`, { status: 'closed' });
    expect(closed.status, closed.text).toBe(200);
    expect(closed.body).toMatchObject({ status: 'closed', closedAt: expect.stringMatching(ISO) });
    const ops = (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations`)).body;
    expect(ops.map((op: any) => op.kind)).toEqual(['close', 'create']);
  });

  it('is not ready to close while a lease works in it, or when the worktree cannot be read', async () => {
    const env = await createEnvironment(t.api, company.id, { name: 'Runs', driver: 'local', config: { root: mountA } });
    const ws = await create({ projectWorkspaceId: primary.id, environmentId: env.id });
    const lease = await acquire(t.api, env.id, { executionWorkspaceId: ws.id });
    const busy = (await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`)).body;
    expect(busy).toMatchObject({ ready: false });
    expect(busy.checks[0]).toMatchObject({ key: 'no_active_leases', status: 'failed', details: { activeLeases: 1 } });
    expect((await t.api.delete(`/api/environments/${env.id}`)).body).toMatchObject({ code: 'environment_in_use', details: { openExecutionWorkspaces: 1 } });
    await t.api.post(`/api/environment-leases/${lease.id}/release`, {});
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`)).body.ready).toBe(true);

    const outside = await create({ projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: '/srv/not-mounted', branch: 'b' });
    const unread = await t.api.get(`/api/execution-workspaces/${outside.id}/close-readiness`);
    expect(unread.body).toMatchObject({ ready: false, checks: [{ status: 'passed' }, { status: 'passed' }, { key: 'git_clean', status: 'failed', details: { code: 'path_not_approved' } }] });
    const notRepo = await create({ projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: mountA, branch: 'b' });
    expect((await t.api.get(`/api/execution-workspaces/${notRepo.id}/close-readiness`)).body).toMatchObject({ ready: false, checks: [{}, {}, { message: 'The cwd is not a git working tree' }] });
  });

  it('patches with the strict update schema and records the operation', async () => {
    const ws = await create({ projectWorkspaceId: primary.id });
    const patched = await t.api.patch(`/api/execution-workspaces/${ws.id}`, { name: 'renamed', branch: 'topic', metadata: { k: 1 }, status: 'idle' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ name: 'renamed', branch: 'topic', metadata: { k: 1 }, status: 'idle' });
    const before = (await t.api.get(`/api/execution-workspaces/${ws.id}`)).body;
    for (const [body, status, code] of [
      [{}, 400, 'validation_failed'], [{ cwd: '/elsewhere' }, 400, 'validation_failed'], [{ status: 'deleted' }, 400, 'validation_failed'],
      [{ mode: 'git_worktree' }, 400, 'validation_failed'], [{ environmentId: UNKNOWN_ID }, 422, 'environment_not_found'],
      [{ metadata: { big: 'x'.repeat(20_000) } }, 400, 'metadata_too_large'],
    ] as Array<[Record<string, unknown>, number, string]>) {
      const res = await t.api.patch(`/api/execution-workspaces/${ws.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ error: expect.any(String), code });
    }
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body).toEqual(before);
    const ops = (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations`)).body;
    expect(ops[0]).toMatchObject({ kind: 'update', status: 'succeeded', details: { changedFields: ['branch', 'metadata', 'name', 'status'] } });
  });

  it('refuses bad creates and writes nothing', async () => {
    const before = await count(t, 'execution_workspaces');
    const otherProject = (await t.api.post(`/api/companies/${world.other.id}/projects`, { name: 'Theirs' })).body;
    const theirs = (await t.api.post(`/api/projects/${otherProject.id}/workspaces`, { name: 'theirs', cwd: '/srv/theirs' })).body;
    for (const [body, status, code] of [
      [{}, 400, 'validation_failed'],
      [{ projectWorkspaceId: UNKNOWN_ID }, 422, 'project_workspace_not_found'],
      [{ projectWorkspaceId: theirs.id }, 422, 'project_workspace_not_found'],
      [{ projectWorkspaceId: primary.id, mode: 'git_worktree', branch: 'b' }, 422, 'cwd_required'],
      [{ projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: '/srv/x' }, 422, 'branch_required'],
      [{ projectWorkspaceId: primary.id, cwd: '/srv/x' }, 422, 'cwd_not_allowed'],
      [{ projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: '/srv/../etc', branch: 'b' }, 422, 'invalid_cwd'],
      [{ projectWorkspaceId: primary.id, mode: 'cloud' }, 400, 'validation_failed'],
      [{ projectWorkspaceId: primary.id, environmentId: UNKNOWN_ID }, 422, 'environment_not_found'],
      [{ projectWorkspaceId: primary.id, extra: 1 }, 400, 'validation_failed'],
    ] as Array<[Record<string, unknown>, number, string]>) {
      const res = await t.api.post(wsPath(company.id), body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ error: expect.any(String), code });
    }
    expect((await plainApi.post(wsPath(company.id), { projectWorkspaceId: primary.id })).body).toMatchObject({ code: 'permission_denied' });
    expect(await count(t, 'execution_workspaces')).toBe(before);
  });

  it('refuses runtime service and command actions it cannot take, writing nothing; one body schema and handler', async () => {
    const ws = await create({ projectWorkspaceId: primary.id });
    const noPath = (await t.api.post(`/api/projects/${project.id}/workspaces`, { name: 'remote only', repoUrl: 'https://git.example.com/acme/remote' })).body;
    const pathless = await create({ projectWorkspaceId: noPath.id });
    const closed = await create({ projectWorkspaceId: primary.id });
    expect((await t.api.patch(`/api/execution-workspaces/${closed.id}`, { status: 'closed' })).status).toBe(200);
    for (const kind of ['runtime-services', 'runtime-commands']) {
      // No service is defined: there is nothing to start (runtime-services.test.ts runs them).
      expect((await t.api.post(`/api/execution-workspaces/${ws.id}/${kind}/start`, { runtimeServiceId: null })).body).toMatchObject({ code: 'runtime_service_required' });
      expect((await t.api.post(`/api/execution-workspaces/${ws.id}/${kind}/explode`, {})).body).toMatchObject({ error: 'Workspace command action not found' });
      expect((await t.api.post(`/api/execution-workspaces/${ws.id}/${kind}/repair`, {})).status).toBe(404);
      expect((await t.api.post(`/api/execution-workspaces/${ws.id}/${kind}/run`, { command: 'rm -rf /' })).status).toBe(400);
      expect((await plainApi.post(`/api/execution-workspaces/${ws.id}/${kind}/stop`, {})).body).toMatchObject({ code: 'board_user_required' });
      expect((await managerApi.post(`/api/execution-workspaces/${ws.id}/${kind}/start`, {})).body).toMatchObject({ code: 'board_user_required' });
      expect((await t.api.post(`/api/execution-workspaces/${closed.id}/${kind}/start`, {})).body).toMatchObject({ code: 'workspace_closed' });
      const unplaced = await t.api.post(`/api/execution-workspaces/${pathless.id}/${kind}/run`, { workspaceCommandId: 'build' });
      expect(unplaced.status).toBe(422);
      expect(unplaced.body).toMatchObject({ code: 'workspace_path_required' });
    }
    const ops = (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations`)).body;
    expect(ops.map((op: any) => [op.kind, op.action, op.status])).toEqual([['create', null, 'succeeded']]);
  });

  it('answers 403 to another company on every route and 404 for unknown ids', async () => {
    const ws = await create({ projectWorkspaceId: primary.id });
    for (const res of [
      await outsiderApi.get(wsPath(company.id)),
      await outsiderApi.post(wsPath(company.id), { projectWorkspaceId: primary.id }),
      await outsiderApi.get(`/api/execution-workspaces/${ws.id}`),
      await outsiderApi.patch(`/api/execution-workspaces/${ws.id}`, { name: 'stolen' }),
      await outsiderApi.get(`/api/execution-workspaces/${ws.id}/close-readiness`),
      await outsiderApi.get(`/api/execution-workspaces/${ws.id}/workspace-operations`),
      await outsiderApi.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, {}),
      await outsiderApi.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, {}),
      await outsiderApi.get(`/api/execution-workspaces/${ws.id}/runtime-services`),
      await outsiderApi.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${UNKNOWN_ID}/log`),
    ]) {
      expect(res.status).toBe(403);
    }
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body.name).toBe('main');
    expect((await t.api.get(`/api/execution-workspaces/${UNKNOWN_ID}`)).body).toMatchObject({ error: 'Execution workspace not found' });
    expect((await t.api.get(`/api/execution-workspaces/${UNKNOWN_ID}/close-readiness`)).status).toBe(404);
  });
});
