import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * ctx.folders and the local-folder API rows. The `folder-probe` fixture declares `notes`
 * (readWrite) and `docs` (read); mounts are configured per company by an instance admin.
 * Next to each mount lies `outside/secret.txt`, which no call may read or change.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/folder-probe', import.meta.url));
const SECRET = 'TOP SECRET outside the mount';
let t: TestKernel;
let base: string;
let notes: string;
let docs: string;
let outside: string;
let companyA: any;
let companyB: any;

const rows = (companyId: string) => `/api/plugins/folder-probe/companies/${companyId}/local-folders`;

async function op(companyId: string, body: Record<string, unknown>): Promise<any> {
  const res = await t.api.post(`/api/plugins/folder-probe/companies/${companyId}/op`, body);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function secretUntouched(): Promise<void> {
  expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'keel-folders-')));
  notes = join(base, 'notes');
  docs = join(base, 'docs');
  outside = join(base, 'outside');
  for (const dir of [notes, docs, outside, join(base, 'notes-b')]) await mkdir(dir);
  await writeFile(join(outside, 'secret.txt'), SECRET);
  await writeFile(join(docs, 'readme.md'), '# Docs');
  t = await startTestKernel({ limits: { jsonBodyBytes: 8 * 1024 * 1024 } });
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  await installAndEnable(t, FIXTURE);
});

afterAll(async () => {
  await t?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe('local-folder API rows', () => {
  it('lists the declared folders, unconfigured at first', async () => {
    const res = await t.api.get(rows(companyA.id));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      pluginKey: 'folder-probe', companyId: companyA.id,
      folders: [
        { folderKey: 'notes', access: 'readWrite', description: 'Read-write test mount', declared: true, configured: false, path: null, updatedAt: null },
        { folderKey: 'docs', access: 'read', description: 'Read-only test mount', declared: true, configured: false, path: null, updatedAt: null },
      ],
    });
    const status = await t.api.get(`${rows(companyA.id)}/notes/status`);
    expect(status.body).toMatchObject({ folderKey: 'notes', configured: false, path: null, healthy: false, problems: [{ code: 'not_configured' }] });
  });

  it('validates candidate paths without saving anything', async () => {
    await writeFile(join(base, 'a-file'), 'x');
    await symlink(t.dataDir, join(base, 'link-to-data'));
    const cases: Array<[string, string]> = [
      ['relative/path', 'not_absolute'],
      [join(base, 'missing'), 'missing'],
      [join(base, 'a-file'), 'not_directory'],
      ['/', 'filesystem_root'],
      ['/etc', 'system_directory'],
      ['/proc/self', 'system_directory'],
      [t.dataDir, 'protected_location'],
      [join(base, 'link-to-data'), 'protected_location'],
      [fileURLToPath(new URL('../..', import.meta.url)), 'protected_location'],
      [FIXTURE, 'protected_location'],
      [`${notes}\n`, 'invalid_path'],
    ];
    for (const [path, code] of cases) {
      const res = await t.api.post(`${rows(companyA.id)}/notes/validate`, { path });
      expect(res.status, res.text).toBe(200);
      expect(res.body.valid, path).toBe(false);
      expect(res.body.problems.map((p: { code: string }) => p.code), path).toContain(code);
    }
    // A directory that contains the data directory is refused as well.
    const parent = join(t.dataDir, '..');
    const above = await t.api.post(`${rows(companyA.id)}/notes/validate`, { path: parent });
    expect(above.body.problems).toContainEqual(expect.objectContaining({ code: 'protected_location' }));
    const nul = await t.api.post(`${rows(companyA.id)}/notes/validate`, { path: `${notes}\u0000` });
    expect(nul.status).toBe(400);
    const good = await t.api.post(`${rows(companyA.id)}/notes/validate`, { path: notes });
    expect(good.body).toMatchObject({ valid: true, path: notes, realPath: notes, readable: true, writable: true, problems: [] });
    const stored = await t.sql.query('select count(*)::int as n from plugin_folder_mounts');
    expect(stored.rows[0].n).toBe(0);
  });

  it('refuses to save an unusable path, changing nothing', async () => {
    const activityBefore = (await t.sql.query("select count(*)::int as n from activity_log where action = 'plugin.local_folder_configured'")).rows[0].n;
    const res = await t.api.put(`${rows(companyA.id)}/notes`, { path: '/' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'invalid_folder_path', details: { problems: expect.arrayContaining([expect.objectContaining({ code: 'filesystem_root' })]) } });
    expect((await t.api.put(`${rows(companyA.id)}/notes`, {})).status).toBe(400);
    expect((await t.api.put(`${rows(companyA.id)}/notes`, { path: 42 })).status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from plugin_folder_mounts')).rows[0].n).toBe(0);
    expect((await t.sql.query("select count(*)::int as n from activity_log where action = 'plugin.local_folder_configured'")).rows[0].n).toBe(activityBefore);
  });

  it('saves a valid path as its real path, with an activity entry, and reports its status', async () => {
    await symlink(notes, join(base, 'notes-alias'));
    const res = await t.api.put(`${rows(companyA.id)}/notes`, { path: join(base, 'notes-alias') });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ folderKey: 'notes', configured: true, path: notes, realPath: notes, healthy: true });
    expect((await t.api.put(`${rows(companyA.id)}/docs`, { path: docs })).status).toBe(200);
    const stored = await t.sql.query('select company_id, folder_key, path from plugin_folder_mounts order by folder_key');
    expect(stored.rows).toEqual([
      { company_id: companyA.id, folder_key: 'docs', path: docs },
      { company_id: companyA.id, folder_key: 'notes', path: notes },
    ]);
    const activity = await t.sql.query("select company_id, entity_id, details from activity_log where action = 'plugin.local_folder_configured' order by seq");
    expect(activity.rows[0]).toMatchObject({ company_id: companyA.id, entity_id: 'folder-probe', details: expect.objectContaining({ folderKey: 'notes', path: notes }) });
    const status = await t.api.get(`${rows(companyA.id)}/docs/status`);
    expect(status.body).toMatchObject({ configured: true, access: 'read', path: docs, healthy: true, writable: false, listing: { entries: 1, truncated: false, sample: ['readme.md'] } });
    const list = await t.api.get(rows(companyA.id));
    expect(list.body.folders.map((f: { configured: boolean }) => f.configured)).toEqual([true, true]);
    // Company B has nothing configured.
    expect((await t.api.get(rows(companyB.id))).body.folders.every((f: { configured: boolean }) => !f.configured)).toBe(true);
  });

  it('answers 404 for unknown folder keys, plugins and companies, and 403 for agents', async () => {
    for (const [method, path] of [['get', `${rows(companyA.id)}/nope/status`], ['post', `${rows(companyA.id)}/nope/validate`], ['put', `${rows(companyA.id)}/nope`]] as const) {
      const res = method === 'get' ? await t.api.get(path) : await t.api[method](path, { path: notes });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('folder_not_declared');
    }
    expect((await t.api.get('/api/plugins/no-such-plugin/companies/' + companyA.id + '/local-folders')).status).toBe(404);
    expect((await t.api.get(rows('00000000-0000-4000-8000-000000000000'))).status).toBe(404);
    expect((await t.api.get(rows('not-a-uuid'))).status).toBe(404);
    const agent = await createAgent(t.api, companyA.id);
    const token = await createAgentKey(t.api, agent.id);
    expect((await t.api.as(token).get(rows(companyA.id))).status).toBe(403);
    expect((await t.api.as(token).put(`${rows(companyA.id)}/notes`, { path: outside })).status).toBe(403);
    expect((await t.sql.query("select path from plugin_folder_mounts where folder_key = 'notes'")).rows).toEqual([{ path: notes }]);
  });
});

describe('ctx.folders: legitimate use', () => {
  it('writes, reads, lists and checks files, creating parent directories', async () => {
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'hello.md', content: 'Hello' })).toEqual({ ok: true, value: null });
    expect(await readFile(join(notes, 'hello.md'), 'utf8')).toBe('Hello');
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'hello.md' })).toEqual({ ok: true, value: 'Hello' });
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'wiki/sources/deep.md', content: 'Deep ü' })).toMatchObject({ ok: true });
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'wiki/sources/deep.md' })).toEqual({ ok: true, value: 'Deep ü' });
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'hello.md', content: 'Hello again' })).toMatchObject({ ok: true });
    expect(await readFile(join(notes, 'hello.md'), 'utf8')).toBe('Hello again');
    expect(await op(companyA.id, { op: 'exists', folder: 'notes', path: 'hello.md' })).toEqual({ ok: true, value: true });
    expect(await op(companyA.id, { op: 'exists', folder: 'notes', path: 'nope.md' })).toEqual({ ok: true, value: false });
    const list = await op(companyA.id, { op: 'list', folder: 'notes' });
    expect(list.value).toEqual([{ name: 'hello.md', kind: 'file', size: 11 }, { name: 'wiki', kind: 'directory', size: 0 }]);
    expect((await op(companyA.id, { op: 'list', folder: 'notes', path: 'wiki/sources' })).value).toEqual([{ name: 'deep.md', kind: 'file', size: 7 }]);
    expect(await op(companyA.id, { op: 'read', folder: 'docs', path: 'readme.md' })).toEqual({ ok: true, value: '# Docs' });
  });

  it('follows links that stay inside the mount for reads, and lists them as what they lead to', async () => {
    await symlink(join(notes, 'hello.md'), join(notes, 'inner-link'));
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'inner-link' })).toEqual({ ok: true, value: 'Hello again' });
    const list = await op(companyA.id, { op: 'list', folder: 'notes' });
    expect(list.value).toContainEqual({ name: 'inner-link', kind: 'file', size: 11 });
  });

  it('reports the errors a plugin can act on', async () => {
    const cases: Array<[any, Record<string, unknown>, number, string]> = [
      [companyA, { op: 'write', folder: 'docs', path: 'new.md', content: 'x' }, 403, 'folder_read_only'],
      [companyA, { op: 'read', folder: 'notes', path: 'missing.md' }, 404, 'file_not_found'],
      [companyA, { op: 'read', folder: 'notes', path: 'wiki' }, 400, 'not_a_file'],
      [companyA, { op: 'list', folder: 'notes', path: 'hello.md' }, 400, 'not_a_directory'],
      [companyA, { op: 'read', folder: 'undeclared', path: 'x' }, 404, 'folder_not_declared'],
      [companyA, { op: 'read', folder: '../notes', path: 'x' }, 400, 'invalid_folder_key'],
      [companyA, { op: 'write', folder: 'notes', path: 'x.md', content: 42 }, 400, 'invalid_arguments'],
      [companyB, { op: 'read', folder: 'notes', path: 'hello.md' }, 409, 'folder_not_configured'],
    ];
    for (const [company, body, status, code] of cases) {
      const out = await op(company.id, body);
      expect(out, JSON.stringify(body)).toMatchObject({ ok: false, error: { status, code } });
      expect(out.error.message).not.toContain(base);
    }
    expect(existsSync(join(docs, 'new.md'))).toBe(false);
    const global = await t.api.post('/api/plugins/folder-probe/op', { op: 'read', folder: 'notes', path: 'hello.md' });
    expect(global.body).toMatchObject({ ok: false, error: { status: 403, code: 'company_scope_required' } });
  });

  it('bounds file sizes both ways', async () => {
    const tooBig = await op(companyA.id, { op: 'write', folder: 'notes', path: 'big.md', content: 'x'.repeat(5 * 1024 * 1024 + 1) });
    expect(tooBig).toMatchObject({ ok: false, error: { status: 413, code: 'file_too_large' } });
    expect(existsSync(join(notes, 'big.md'))).toBe(false);
    await writeFile(join(notes, 'huge.bin'), Buffer.alloc(6 * 1024 * 1024));
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'huge.bin' })).toMatchObject({ ok: false, error: { status: 413, code: 'file_too_large' } });
    await rm(join(notes, 'huge.bin'));
  });

  it('gives each company only its own mounts', async () => {
    expect((await t.api.put(`${rows(companyB.id)}/notes`, { path: join(base, 'notes-b') })).status).toBe(200);
    expect(await op(companyB.id, { op: 'read', folder: 'notes', path: 'hello.md' })).toMatchObject({ ok: false, error: { code: 'file_not_found' } });
    expect(await op(companyB.id, { op: 'write', folder: 'notes', path: 'b.md', content: 'B' })).toMatchObject({ ok: true });
    expect(existsSync(join(base, 'notes-b', 'b.md'))).toBe(true);
    expect(existsSync(join(notes, 'b.md'))).toBe(false);
    expect(await op(companyB.id, { op: 'read', folder: 'docs', path: 'readme.md' })).toMatchObject({ ok: false, error: { code: 'folder_not_configured' } });
  });
});

describe('path traversal attempts fail closed', () => {
  it('refuses traversal, absolute, encoded, NUL, backslash and empty-segment paths for every operation', async () => {
    const paths: unknown[] = [
      '../outside/secret.txt', '..', 'wiki/../../outside/secret.txt', 'wiki/../hello.md', './hello.md', '.',
      `${outside}/secret.txt`, '/etc/passwd', '//etc/passwd',
      '..%2foutside%2fsecret.txt', '%2e%2e/outside/secret.txt', '%2E%2E%2Foutside', 'wiki%2f..%2f..%2foutside', '..%5coutside', '%00',
      '..\\outside\\secret.txt', 'C:\\Windows\\win.ini', 'hello.md<NUL>.txt', 'hello.md<NUL>', '<NUL>', '..<NUL>/outside', 'wiki\n/x',
      'wiki//sources/deep.md', 'hello.md/', 'wiki/', '....//outside', 'a/'.repeat(70) + 'b', 'x'.repeat(1025), 'x'.repeat(256), 42, { path: 'hello.md' }, ['hello.md'],
    ];
    for (const path of paths) {
      for (const operation of ['read', 'write', 'list', 'exists']) {
        if ((path === '.' || path === '') && (operation === 'list' || operation === 'exists')) continue;
        const out = await op(companyA.id, { op: operation, folder: 'notes', path, content: 'pwned' });
        expect(out.ok, `${operation} ${JSON.stringify(path)}`).toBe(false);
        // A path that is not a string breaks the method's declared arguments (sdk/capabilities) before the folder code sees it.
        expect(out.error, `${operation} ${JSON.stringify(path)}`).toMatchObject({ status: 400, code: typeof path === 'string' ? 'invalid_path' : 'invalid_arguments' });
        expect(out.error.message).not.toContain(base);
      }
    }
    await secretUntouched();
    expect(existsSync(join(base, 'pwned'))).toBe(false);
  }, 60_000);

  it('treats look-alike dots and slashes as plain names', async () => {
    for (const path of ['\u2025/outside/secret.txt', '\uff0e\uff0e\uff0foutside', '\u002e\u2024/x']) {
      const out = await op(companyA.id, { op: 'read', folder: 'notes', path });
      expect(out, path).toMatchObject({ ok: false, error: { code: 'file_not_found' } });
    }
  });

  it('refuses a directory link inside the mount that points outside, for every operation', async () => {
    await symlink(outside, join(notes, 'escape'));
    for (const [operation, path] of [['read', 'escape/secret.txt'], ['list', 'escape'], ['exists', 'escape/secret.txt'], ['exists', 'escape'], ['write', 'escape/new.txt'], ['write', 'escape/secret.txt']]) {
      const out = await op(companyA.id, { op: operation, folder: 'notes', path, content: 'pwned' });
      expect(out, `${operation} ${path}`).toMatchObject({ ok: false, error: { status: 403, code: 'path_outside_folder' } });
      expect(out.error.message).not.toContain(outside);
    }
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    await secretUntouched();
    const list = await op(companyA.id, { op: 'list', folder: 'notes' });
    expect(list.value.map((entry: { name: string }) => entry.name)).not.toContain('escape');
  });

  it('refuses a file link that points outside, and never writes through a link', async () => {
    await symlink(join(outside, 'secret.txt'), join(notes, 'link.txt'));
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'link.txt' })).toMatchObject({ ok: false, error: { code: 'path_outside_folder' } });
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'link.txt', content: 'pwned' })).toMatchObject({ ok: false, error: { status: 403, code: 'symlink_refused' } });
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'inner-link', content: 'pwned' })).toMatchObject({ ok: false, error: { code: 'symlink_refused' } });
    expect(await readFile(join(notes, 'hello.md'), 'utf8')).toBe('Hello again');
    await secretUntouched();
    // A dangling link to where a file would be created outside.
    await symlink(join(outside, 'planted.txt'), join(notes, 'dangling.txt'));
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'dangling.txt', content: 'pwned' })).toMatchObject({ ok: false, error: { code: 'symlink_refused' } });
    expect(await op(companyA.id, { op: 'exists', folder: 'notes', path: 'dangling.txt' })).toEqual({ ok: true, value: false });
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
  });

  it('catches a parent directory replaced by a link after the mount was validated', async () => {
    await mkdir(join(notes, 'later'));
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'later/ok.md', content: 'fine' })).toMatchObject({ ok: true });
    await rm(join(notes, 'later'), { recursive: true });
    await symlink(outside, join(notes, 'later'));
    for (const [operation, path] of [['write', 'later/pwn.txt'], ['write', 'later/deeper/pwn.txt'], ['read', 'later/secret.txt'], ['list', 'later']]) {
      const out = await op(companyA.id, { op: operation, folder: 'notes', path, content: 'pwned' });
      expect(out, `${operation} ${path}`).toMatchObject({ ok: false, error: { status: 403, code: 'path_outside_folder' } });
    }
    expect(existsSync(join(outside, 'pwn.txt'))).toBe(false);
    expect(existsSync(join(outside, 'deeper'))).toBe(false);
    await secretUntouched();
  });

  it('refuses a mount whose directory was swapped for a link after it was configured', async () => {
    const swap = join(base, 'swap');
    await mkdir(swap);
    await writeFile(join(swap, 'ok.md'), 'ok');
    expect((await t.api.put(`${rows(companyB.id)}/docs`, { path: swap })).status).toBe(200);
    expect(await op(companyB.id, { op: 'read', folder: 'docs', path: 'ok.md' })).toEqual({ ok: true, value: 'ok' });
    await rename(swap, `${swap}-old`);
    await symlink(outside, swap);
    const out = await op(companyB.id, { op: 'read', folder: 'docs', path: 'secret.txt' });
    expect(out).toMatchObject({ ok: false, error: { status: 409, code: 'folder_unavailable' } });
    expect(out.error.message).not.toContain(base);
    const status = await t.api.get(`${rows(companyB.id)}/docs/status`);
    expect(status.body).toMatchObject({ realPath: outside, healthy: false });
    expect(status.body.problems).toContainEqual(expect.objectContaining({ code: 'path_changed' }));
  });

  it('does not block on or read special files', async () => {
    try { execFileSync('mkfifo', [join(notes, 'pipe')]); } catch { return; }
    const started = Date.now();
    expect(await op(companyA.id, { op: 'read', folder: 'notes', path: 'pipe' })).toMatchObject({ ok: false, error: { code: 'not_a_file' } });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await op(companyA.id, { op: 'write', folder: 'notes', path: 'pipe', content: 'x' })).toMatchObject({ ok: false, error: { code: 'not_a_file' } });
  });
});
