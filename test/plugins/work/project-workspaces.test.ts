import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { ISO, startWorkWorld, UNKNOWN_ID } from './artifact-helpers.ts';

/** Project workspaces of the work plugin: a project's working directories and repositories, one primary per project. */
let t: TestKernel;
let company: any;
let other: any;
let agentApi: Api;
let outsiderApi: Api;

beforeAll(async () => {
  ({ t, company, other, agentApi, outsiderApi } = await startWorkWorld('Workspaces Co', 'Builder'));
});
afterAll(async () => { await t?.stop(); });

async function project(name: string, companyId = company.id) {
  const res = await t.api.post(`/api/companies/${companyId}/projects`, { name });
  expect(res.status, res.text).toBe(201);
  return res.body;
}
async function create(projectId: string, body: Record<string, unknown>, api: Api = t.api) {
  const res = await api.post(`/api/projects/${projectId}/workspaces`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
const base = (projectId: string) => `/api/projects/${projectId}/workspaces`;
const count = async () => (await t.sql.query('select count(*)::int as n from plugin_work.project_workspaces')).rows[0].n;
const primaries = async (projectId: string) => (await t.api.get(base(projectId))).body.filter((w: any) => w.isPrimary).map((w: any) => w.id);

describe('project workspaces', () => {
  it('creates (the first is primary), reads, lists oldest first, patches and deletes, with activity', async () => {
    const p = await project('App');
    const main = await create(p.id, { name: 'main', cwd: '/srv/app', repoUrl: 'https://git.example.com/acme/app', repoRef: 'main', metadata: { lang: 'ts' } });
    expect(main).toEqual({
      id: expect.any(String), companyId: company.id, projectId: p.id, name: 'main', cwd: '/srv/app', repoUrl: 'https://git.example.com/acme/app',
      repoRef: 'main', isPrimary: true, metadata: { lang: 'ts' }, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    const docs = await create(p.id, { name: 'docs', repoUrl: 'https://git.example.com/acme/docs' }, agentApi);
    expect(docs).toMatchObject({ isPrimary: false, cwd: null, repoRef: null, metadata: null });
    expect((await t.api.get(`${base(p.id)}/${main.id}`)).body).toEqual(main);
    expect((await t.api.get(base(p.id))).body.map((w: any) => w.id)).toEqual([main.id, docs.id]);

    const patched = await t.api.patch(`${base(p.id)}/${docs.id}`, { name: 'documentation', cwd: '/srv/docs', metadata: null });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ name: 'documentation', cwd: '/srv/docs', isPrimary: false });

    const removed = await t.api.delete(`${base(p.id)}/${docs.id}`);
    expect(removed.status, removed.text).toBe(200);
    expect((await t.api.get(`${base(p.id)}/${docs.id}`)).status).toBe(404);
    const { rows } = await t.sql.query("select action, details from activity_log where entity_id = $1 and action like 'project.workspace_%' order by seq", [p.id]);
    expect(rows.map((r: any) => r.action)).toEqual(['project.workspace_created', 'project.workspace_created', 'project.workspace_updated', 'project.workspace_deleted']);
    expect(rows[2].details).toMatchObject({ workspaceId: docs.id, changedFields: ['name', 'cwd'] });
  });

  it('keeps one primary per project: making one primary clears the old, deleting the primary promotes the oldest', async () => {
    const p = await project('Primaries');
    const a = await create(p.id, { name: 'a', cwd: '/srv/a' });
    const b = await create(p.id, { name: 'b', cwd: '/srv/b', isPrimary: true });
    const c = await create(p.id, { name: 'c', cwd: '/srv/c' });
    expect(await primaries(p.id)).toEqual([b.id]);
    expect((await t.api.patch(`${base(p.id)}/${c.id}`, { isPrimary: true })).body.isPrimary).toBe(true);
    expect(await primaries(p.id)).toEqual([c.id]);
    await t.api.delete(`${base(p.id)}/${c.id}`);
    expect(await primaries(p.id)).toEqual([a.id]);
  });

  it('refuses bad bodies with the JSON error and writes nothing', async () => {
    const p = await project('Refusals');
    const before = await count();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{}, 400, 'validation_failed'],
      [{ name: 'x', cwd: 'relative/path' }, 400, 'validation_failed'],
      [{ name: 'x', cwd: '/srv/../etc' }, 422, 'invalid_cwd'],
      [{ name: 'x' }, 422, 'workspace_location_required'],
      [{ name: 'x', repoUrl: 'https://user:secret@git.example.com/a' }, 422, 'repo_url_credentials'],
      [{ name: 'x', cwd: '/srv/x', unknown: 1 }, 400, 'validation_failed'],
      [{ name: '', cwd: '/srv/x' }, 400, 'validation_failed'],
      [{ name: 'x', cwd: '/srv/x', isPrimary: 'yes' }, 400, 'validation_failed'],
      [{ name: 'x', cwd: '/srv/x', metadata: { big: 'y'.repeat(20_000) } }, 400, 'metadata_too_large'],
    ];
    for (const [body, status, code] of cases) {
      const res = await t.api.post(base(p.id), body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ error: expect.any(String), code });
    }
    const w = await create(p.id, { name: 'w', cwd: '/srv/w' });
    const emptied = await t.api.patch(`${base(p.id)}/${w.id}`, { cwd: null });
    expect(emptied.status).toBe(422);
    expect((await t.api.patch(`${base(p.id)}/${w.id}`, {})).status).toBe(400);
    expect(await count()).toBe(before + 1);
  });

  it('answers 404 for unknown ids and a workspace under another project', async () => {
    const p = await project('Found');
    const q = await project('Elsewhere');
    const w = await create(p.id, { name: 'w', cwd: '/srv/w' });
    expect((await t.api.get(base(UNKNOWN_ID))).status).toBe(404);
    expect((await t.api.post(base(UNKNOWN_ID), { name: 'x', cwd: '/x' })).body).toMatchObject({ error: 'Project not found' });
    const unknown = await t.api.get(`${base(p.id)}/${UNKNOWN_ID}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'Project workspace not found' });
    expect((await t.api.get(`${base(p.id)}/not-a-uuid`)).status).toBe(404);
    for (const res of [await t.api.get(`${base(q.id)}/${w.id}`), await t.api.patch(`${base(q.id)}/${w.id}`, { name: 'moved' }), await t.api.delete(`${base(q.id)}/${w.id}`)]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: 'Project workspace not found' });
    }
    expect((await t.api.get(`${base(p.id)}/${w.id}`)).body.name).toBe('w');
  });

  it('refuses another company with 403 on every route', async () => {
    const p = await project('Private');
    const w = await create(p.id, { name: 'w', cwd: '/srv/w' });
    const before = await count();
    for (const res of [
      await outsiderApi.get(base(p.id)),
      await outsiderApi.post(base(p.id), { name: 'x', cwd: '/x' }),
      await outsiderApi.get(`${base(p.id)}/${w.id}`),
      await outsiderApi.patch(`${base(p.id)}/${w.id}`, { name: 'stolen' }),
      await outsiderApi.delete(`${base(p.id)}/${w.id}`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: expect.any(String) });
    }
    expect(await count()).toBe(before);
    // The other company's own project is no way into this one's workspaces either.
    const theirs = await project('Theirs', other.id);
    expect((await t.api.get(`${base(theirs.id)}/${w.id}`)).status).toBe(404);
  });
});
