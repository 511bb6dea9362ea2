import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * ctx.workspaces (local.workspaces): absolute paths confined to the folders an operator mounted
 * for the call's company. Next to the mounts lies `outside/secret.txt`, which no call may read,
 * list, create beside or remove; a repository whose configuration names an fsmonitor program
 * must not get it run.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/workspace-probe', import.meta.url));
let t: TestKernel;
let base: string;
let work: string;
let ro: string;
let workB: string;
let outside: string;
let companyA: any;
let companyB: any;

async function op(companyId: string, operation: string, path: unknown): Promise<any> {
  const res = await t.api.post(`/api/plugins/workspace-probe/companies/${companyId}/op`, { op: operation, path });
  expect(res.status, res.text).toBe(200);
  return res.body;
}
const refused = async (companyId: string, operation: string, path: unknown) => {
  const answer = await op(companyId, operation, path);
  expect(answer.ok, `${operation} ${String(path)}: ${JSON.stringify(answer)}`).toBe(false);
  return answer.error as { status: number; code: string; message: string };
};

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'keel-workspaces-')));
  await chmod(base, 0o755);
  work = join(base, 'work');
  ro = join(base, 'ro');
  workB = join(base, 'work-b');
  outside = join(base, 'outside');
  for (const dir of [work, ro, workB, outside]) await mkdir(dir, { mode: 0o755 });
  await writeFile(join(outside, 'secret.txt'), 'secret');
  t = await startTestKernel();
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  await installAndEnable(t, FIXTURE);
  const mount = async (companyId: string, key: string, path: string) => {
    const res = await t.api.put(`/api/plugins/workspace-probe/companies/${companyId}/local-folders/${key}`, { path });
    expect(res.status, res.text).toBeLessThan(300);
  };
  await mount(companyA.id, 'work', work);
  await mount(companyA.id, 'ro', ro);
  await mount(companyB.id, 'work', workB);
});

afterAll(async () => {
  await t?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe('ctx.workspaces: legitimate use', () => {
  it('inspects, makes and removes directories inside a mounted folder', async () => {
    expect((await op(companyA.id, 'inspect', work)).value).toEqual({ path: work, folderKey: 'work', exists: true, isDirectory: true, writable: true });
    expect((await op(companyA.id, 'inspect', `${work}/a/b`)).value).toMatchObject({ exists: false, writable: false });
    expect((await op(companyA.id, 'makeDirectory', `${work}/a/b`)).value).toMatchObject({ exists: true, isDirectory: true, writable: true });
    expect(existsSync(join(work, 'a', 'b'))).toBe(true);
    expect((await op(companyA.id, 'removeDirectory', `${work}/a`)).value).toEqual({ removed: true });
    expect(existsSync(join(work, 'a'))).toBe(false);
    expect((await op(companyA.id, 'removeDirectory', `${work}/a`)).value).toEqual({ removed: false });
    expect((await op(companyA.id, 'inspect', ro)).value).toMatchObject({ folderKey: 'ro', exists: true, writable: false });
  });

  it('reads git status of a working tree', async () => {
    const repo = join(work, 'repo');
    await mkdir(repo);
    execFileSync('git', ['init', '-q', '-b', 'trunk'], { cwd: repo });
    execFileSync('chmod', ['-R', 'a+rX', repo]);
    expect((await op(companyA.id, 'gitStatus', repo)).value).toEqual({ repository: true, branch: 'trunk', clean: true, changedFiles: 0, sample: [] });
    await writeFile(join(repo, 'new.txt'), 'x');
    expect((await op(companyA.id, 'gitStatus', repo)).value).toMatchObject({ clean: false, changedFiles: 1, sample: ['?? new.txt'] });
    expect((await op(companyA.id, 'gitStatus', work)).value).toMatchObject({ repository: false });
  });
});

describe('ctx.workspaces: attacks fail closed', () => {
  it('refuses paths outside every mount of the company, including another company\'s', async () => {
    for (const path of [outside, join(outside, 'secret.txt'), '/etc', '/', workB, `${base}`]) {
      for (const operation of ['inspect', 'makeDirectory', 'removeDirectory', 'gitStatus']) {
        expect((await refused(companyA.id, operation, path)).code).toBe('path_not_approved');
      }
    }
    expect((await refused(companyB.id, 'inspect', work)).code).toBe('path_not_approved');
    expect(existsSync(join(outside, 'secret.txt'))).toBe(true);
  });

  it('refuses traversal, relative, control-character and non-string paths before touching the disk', async () => {
    for (const path of [`${work}/../outside`, `${work}/./x`, 'work/x', '', `${work}/\u0001`, 42, null, `${work}/${'x'.repeat(5000)}`]) {
      const error = await refused(companyA.id, 'makeDirectory', path);
      expect(['invalid_path', 'invalid_arguments'], `${String(path).slice(0, 40)}: ${error.code}`).toContain(error.code);
    }
    expect(existsSync(join(base, 'x'))).toBe(false);
  });

  it('never follows a link out of the mount', async () => {
    await symlink(outside, join(work, 'escape'));
    expect((await refused(companyA.id, 'inspect', `${work}/escape`)).code).toBe('path_outside_folder');
    expect((await refused(companyA.id, 'makeDirectory', `${work}/escape/planted`)).code).toBe('path_outside_folder');
    expect((await refused(companyA.id, 'gitStatus', `${work}/escape`)).code).toBe('path_outside_folder');
    expect((await refused(companyA.id, 'removeDirectory', `${work}/escape`)).code).toBe('path_outside_folder');
    expect(existsSync(join(outside, 'planted'))).toBe(false);
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
  });

  it('refuses writes in a read-only mount and removing the mount itself', async () => {
    expect((await refused(companyA.id, 'makeDirectory', `${ro}/x`)).code).toBe('folder_read_only');
    expect((await refused(companyA.id, 'removeDirectory', ro)).code).toBe('folder_read_only');
    expect((await refused(companyA.id, 'removeDirectory', work)).code).toBe('invalid_path');
    expect(existsSync(work)).toBe(true);
  });

  it('does not run a program the repository configuration names', async () => {
    const repo = join(work, 'hostile');
    // The marker's folder is writable by anyone, so the program would leave it whichever user git runs as.
    await mkdir(join(base, 'markers'), { mode: 0o777 });
    await chmod(join(base, 'markers'), 0o777);
    const marker = join(base, 'markers', 'fsmonitor-ran');
    await mkdir(repo);
    execFileSync('git', ['init', '-q'], { cwd: repo });
    execFileSync('git', ['config', 'core.fsmonitor', `touch ${marker}`], { cwd: repo });
    execFileSync('git', ['config', 'core.hooksPath', join(repo, 'hooks')], { cwd: repo });
    execFileSync('chmod', ['-R', 'a+rX', repo]);
    expect((await op(companyA.id, 'gitStatus', repo)).value).toMatchObject({ repository: true });
    expect(existsSync(marker)).toBe(false);
  });
});
