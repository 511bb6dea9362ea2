import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, symlink } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, boardToken, createAgent, createAgentKey, insertUser } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startPeerKernel, type Api, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable, pluginVariant } from '../../support/plugins.ts';
import { alive } from '../../support/processes.ts';
import { count, ISO, startEnvironmentsWorld } from './helpers.ts';

/**
 * A workspace's runtime services and workspace commands, really run: the kernel starts them as
 * the agent user in the workspace's cwd (confined to the company's mounted folder), the plugin
 * records their state and results, and a stop reaches the Keel process that runs them.
 */
let world: Awaited<ReturnType<typeof startEnvironmentsWorld>>;
let t: TestKernel;
let peer: PeerKernel;
let company: any;
let mountA: string;
let managerApi: Api;
let project: any;

beforeAll(async () => {
  // Something only the server's environment holds: a workspace process must not see it.
  process.env.KEEL_TEST_SERVER_ONLY = 'server-only';
  world = await startEnvironmentsWorld();
  ({ t, company, mountA, managerApi } = world);
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Runner' })).body;
});
afterAll(async () => {
  delete process.env.KEEL_TEST_SERVER_ONLY;
  await peer?.stop();
  await world?.stop();
});

const SERVICE = { id: 'web', name: 'Web', command: '/bin/sh', args: ['-c', 'echo "listening as $(id -u)"; exec sleep 300'], env: { GREETING: 'hi' }, port: 8080, url: 'http://localhost:8080', graceSec: 2 };
const COMMAND = {
  id: 'build', name: 'Build', command: '/bin/sh',
  args: ['-c', 'echo built > out.txt; echo "db=${DATABASE_URL:-absent} server=${KEEL_TEST_SERVER_ONLY:-absent} greeting=$GREETING home=$HOME"; echo "names=$(env | cut -d= -f1 | sort | tr \'\\n\' \' \')"; echo warn >&2; exit 3'],
  env: { GREETING: 'hello' },
};

/** An open project_primary execution workspace whose cwd is `<mount>/<name>`, writable by the agent user, with the definitions. */
async function workspace(name: string, cwd = join(mountA, name)): Promise<any> {
  await mkdir(cwd, { recursive: true });
  await chmod(cwd, 0o777);
  const source = (await t.api.post(`/api/projects/${project.id}/workspaces`, { name, cwd })).body;
  const created = await t.api.post(`/api/companies/${company.id}/execution-workspaces`, { projectWorkspaceId: source.id });
  expect(created.status, created.text).toBe(201);
  const patched = await t.api.patch(`/api/execution-workspaces/${created.body.id}`, { runtimeServices: [SERVICE], workspaceCommands: [COMMAND] });
  expect(patched.status, patched.text).toBe(200);
  return patched.body;
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const operations = async (id: string) => (await t.api.get(`/api/execution-workspaces/${id}/workspace-operations`)).body as any[];
const services = async (id: string, api: Api = t.api) => (await api.get(`/api/execution-workspaces/${id}/runtime-services`)).body as any[];

/** The host's pids of a workspace process, found by its execution id in their environment. */
function processesOf(executionId: string): number[] {
  return readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).filter((pid) => {
    try { return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`KEEL_EXECUTION_ID=${executionId}`); } catch { return false; }
  }).map(Number);
}

describe('runtime services and workspace commands', () => {
  it('keeps the definitions on the workspace; only board users write them', async () => {
    const ws = await workspace('definitions');
    expect(ws.runtimeServices).toEqual([SERVICE]);
    expect(ws.workspaceCommands).toEqual([COMMAND]);
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body).toMatchObject({ runtimeServices: [SERVICE], workspaceCommands: [COMMAND] });
    for (const body of [{ workspaceCommands: [] }, { runtimeServices: [] }]) {
      const refused = await managerApi.patch(`/api/execution-workspaces/${ws.id}`, body);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toMatchObject({ code: 'board_user_required', error: expect.any(String) });
    }
    for (const [body, status, code] of [
      [{ workspaceCommands: [{ ...COMMAND, env: { LD_PRELOAD: '/tmp/evil.so' } }] }, 422, 'workspace_env_refused'],
      [{ runtimeServices: [{ ...SERVICE, env: { NODE_OPTIONS: '--require /tmp/x.js' } }] }, 422, 'workspace_env_refused'],
      [{ workspaceCommands: [{ ...COMMAND, env: { SERVICE_API_KEY: 'x' } }] }, 422, 'workspace_env_refused'],
      [{ workspaceCommands: [COMMAND, COMMAND] }, 422, 'duplicate_definition_id'],
      [{ workspaceCommands: [{ ...COMMAND, id: 'Bad Id' }] }, 400, 'validation_failed'],
      [{ runtimeServices: [{ ...SERVICE, extra: true }] }, 400, 'validation_failed'],
    ] as Array<[Record<string, unknown>, number, string]>) {
      const res = await t.api.patch(`/api/execution-workspaces/${ws.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ error: expect.any(String), code });
    }
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}`)).body).toMatchObject({ runtimeServices: [SERVICE], workspaceCommands: [COMMAND] });
  });

  it('runs a command to its exit code: a failed operation with the code, its duration and its output', async () => {
    const ws = await workspace('command');
    const res = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, { workspaceCommandId: 'build' });
    expect(res.status, res.text).toBe(202);
    expect(res.body.operation).toMatchObject({ kind: 'runtime_command', action: 'run', status: 'running', executionId: expect.any(String), details: { workspaceCommandId: 'build' } });
    const operationId = res.body.operation.id;
    const [done] = await until('the command ends', async () => (await operations(ws.id)).filter((op) => op.id === operationId), ([op]) => op.status !== 'running');
    expect(done).toMatchObject({
      status: 'failed', finishedAt: expect.stringMatching(ISO),
      details: { workspaceCommandId: 'build', executionStatus: 'failed', exitCode: 3, signal: null, errorCode: 'exit_status', durationMs: expect.any(Number) },
    });
    expect(await readFile(join(mountA, 'command', 'out.txt'), 'utf8')).toBe('built\n');
    const log = await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${operationId}/log`);
    expect(log.status, log.text).toBe(200);
    expect(log.body).toMatchObject({ operationId, eof: true, offset: 0 });
    const lines = log.body.lines.map((line: any) => [line.stream, line.line]);
    // Nothing of the server's environment: the database URL is absent, the definition's variable is there.
    expect(lines).toContainEqual(['stdout', expect.stringMatching(/^db=absent server=absent greeting=hello home=\//)]);
    expect(lines).toContainEqual(['stderr', 'warn']);
    const names = lines.find(([, line]: [string, string]) => line.startsWith('names='))[1].slice('names='.length).trim().split(' ');
    // The kernel's few variables and the definition's; the shell adds its own PWD (and perhaps SHLVL).
    expect(names.filter((name: string) => !['PWD', 'SHLVL', 'OLDPWD', '_'].includes(name))).toEqual(['GREETING', 'HOME', 'KEEL_EXECUTION_ID', 'LANG', 'PATH', 'TMPDIR']);
    expect(lines).toContainEqual(['system', 'exited with code 3']);
    const paged = await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${operationId}/log?offset=0&limitBytes=10`);
    expect(paged.body).toMatchObject({ eof: false, nextOffset: expect.any(Number) });
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${ws.id}/log`)).status).toBe(404);
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/not-a-uuid/log`)).status).toBe(404);
  });

  it('starts a service, lists it running, refuses to close over it, restarts and stops it (its processes gone)', async () => {
    const ws = await workspace('service');
    const started = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, { runtimeServiceId: 'web' });
    expect(started.status, started.text).toBe(202);
    expect(started.body.runtimeService).toMatchObject({ id: 'web', name: 'Web', port: 8080, url: 'http://localhost:8080', status: expect.stringMatching(/^(starting|running)$/) });
    expect(started.body.runtimeService).not.toHaveProperty('pid');
    const first = started.body.runtimeService.executionId;
    const [running] = await until('the service runs', () => services(ws.id), ([service]) => service.status === 'running');
    expect(running).toMatchObject({ id: 'web', status: 'running', executionId: first, startedAt: expect.stringMatching(ISO), stoppedAt: null, exitCode: null });
    const pids = await until('its processes appear', async () => processesOf(first), (found) => found.length > 0);
    // Its shell has printed its line before anything stops it (on a loaded machine a process can exist a while before it prints).
    const logOf = async (operationId: string) => (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${operationId}/log`)).body.lines.map((line: any) => line.line) as string[];
    await until('the service says it listens', () => logOf(started.body.operation.id), (lines) => lines.some((line) => line.startsWith('listening as')));
    expect((await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, { serviceIndex: 0 })).body).toMatchObject({ code: 'runtime_service_running' });

    const readiness = (await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`)).body;
    expect(readiness.ready).toBe(false);
    expect(readiness.checks).toContainEqual(expect.objectContaining({ key: 'no_running_services', status: 'failed', details: { runningServices: 1 } }));
    expect((await t.api.patch(`/api/execution-workspaces/${ws.id}`, { status: 'closed' })).body).toMatchObject({ code: 'workspace_not_ready_to_close' });

    const restarted = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/restart`, { runtimeServiceId: 'web' });
    expect(restarted.status, restarted.text).toBe(202);
    const second = restarted.body.runtimeService.executionId;
    expect(second).not.toBe(first);
    expect(pids.filter(alive)).toEqual([]);
    await until('the restarted service runs', async () => processesOf(second), (found) => found.length > 0);

    const stopped = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/stop`, { runtimeServiceId: 'web' });
    expect(stopped.status, stopped.text).toBe(200);
    expect(stopped.body.runtimeService).toMatchObject({ status: 'stopped', executionId: second, stoppedAt: expect.stringMatching(ISO) });
    expect(stopped.body.operation).toMatchObject({ action: 'stop', status: 'succeeded' });
    expect(processesOf(second).filter(alive)).toEqual([]);
    expect((await services(ws.id))[0]).toMatchObject({ status: 'stopped' });
    // Stopping what does not run changes nothing and says so.
    expect((await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/stop`, {})).body.operation).toMatchObject({ status: 'succeeded', message: 'Web was not running' });
    // The starts' operations took the services' ends; the service's output is readable.
    const ops = await until('the starts record their ends', () => operations(ws.id), (list) => list.every((op) => op.status !== 'running'));
    expect(ops.filter((op) => ['start', 'restart'].includes(op.action)).map((op) => [op.action, op.status, op.details.executionStatus])).toEqual([['restart', 'succeeded', 'cancelled'], ['start', 'succeeded', 'cancelled']]);
    const log = (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${started.body.operation.id}/log`)).body;
    // As the unprivileged agent user, never the server's root.
    expect(log.lines.map((line: any) => line.line)).toContainEqual(expect.stringMatching(/^listening as [1-9]\d*$/));
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`)).body.ready).toBe(true);
    expect((await t.api.patch(`/api/execution-workspaces/${ws.id}`, { status: 'closed' })).status).toBe(200);
    expect((await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, {})).body).toMatchObject({ code: 'workspace_closed' });
  });

  it('records a service that exits by itself as exited, with its code', async () => {
    const ws = await workspace('exits');
    await t.api.patch(`/api/execution-workspaces/${ws.id}`, { runtimeServices: [{ id: 'once', name: 'Once', command: '/bin/sh', args: ['-c', 'exit 7'] }] });
    expect((await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, {})).status).toBe(202);
    const [ended] = await until('the service exits', () => services(ws.id), ([service]) => service.status !== 'starting' && service.status !== 'running');
    expect(ended).toMatchObject({ id: 'once', status: 'exited', exitCode: 7, signal: null });
  });

  it('hands a secret reference to the process as its value, never writing the value anywhere the board reads', async () => {
    const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'deploy-token', value: 'tok-3141592653' });
    expect(secret.status, secret.text).toBe(201);
    const ws = await workspace('secrets');
    const command = { id: 'deploy', name: 'Deploy', command: '/bin/sh', args: ['-c', `test "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" = ${createHash('sha256').update('tok-3141592653').digest('hex')} && echo token-ok`], env: { TOKEN: { type: 'secret_ref', secretId: secret.body.id } } };
    const patched = await t.api.patch(`/api/execution-workspaces/${ws.id}`, { workspaceCommands: [command] });
    expect(patched.status, patched.text).toBe(200);
    expect(JSON.stringify(patched.body)).not.toContain('tok-3141592653');
    const ran = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, { workspaceCommandId: 'deploy' });
    expect(ran.status, ran.text).toBe(202);
    const [done] = await until('the command ends', async () => (await operations(ws.id)).filter((op) => op.id === ran.body.operation.id), ([op]) => op.status !== 'running');
    expect(done).toMatchObject({ status: 'succeeded', details: { exitCode: 0 } });
    const log = (await t.api.get(`/api/execution-workspaces/${ws.id}/workspace-operations/${done.id}/log`)).body;
    expect(log.lines.map((line: any) => line.line)).toContain('token-ok');
    const audit = await t.sql.query("select details from security_audit_log where company_id = $1 and event = 'secret.environment_resolved' and details->>'workspaceProcess' = 'true'", [company.id]);
    expect(audit.rows).toHaveLength(1);
    expect(JSON.stringify(audit.rows)).not.toContain('tok-3141592653');
    const missing = await t.api.patch(`/api/execution-workspaces/${ws.id}`, { workspaceCommands: [{ ...command, env: { TOKEN: { type: 'secret_ref', secretId: '00000000-0000-4000-8000-000000000000' } } }] });
    expect(missing.status).toBe(200);
    const refused = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, { workspaceCommandId: 'deploy' });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toMatchObject({ code: 'secret_ref_unresolvable' });
  });

  it('lets only a board user with access to the company run anything', async () => {
    const ws = await workspace('access');
    const outsiderUser = await insertUser(t);
    await addMember(t, world.other.id, outsiderUser);
    const outsiderBoard = t.api.as(await boardToken(t, outsiderUser));
    const before = await count(t, 'workspace_operations');
    for (const [api, status, code] of [
      [managerApi, 403, 'board_user_required'], [world.plainApi, 403, 'board_user_required'], [world.outsiderApi, 403, undefined], [outsiderBoard, 403, undefined],
    ] as Array<[Api, number, string | undefined]>) {
      for (const [path, body] of [['runtime-commands/run', { workspaceCommandId: 'build' }], ['runtime-services/start', { runtimeServiceId: 'web' }], ['runtime-services/stop', {}]] as const) {
        const res = await api.post(`/api/execution-workspaces/${ws.id}/${path}`, body);
        expect(res.status, `${path} ${res.text}`).toBe(status);
        if (code) expect(res.body).toMatchObject({ code });
      }
    }
    expect(await count(t, 'workspace_operations')).toBe(before);
    const member = await insertUser(t);
    await addMember(t, company.id, member);
    const memberBoard = t.api.as(await boardToken(t, member));
    const ran = await memberBoard.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, { workspaceCommandId: 'build' });
    expect(ran.status, ran.text).toBe(202);
    expect(ran.body.operation).toMatchObject({ actorType: 'user', actorId: member });
  });

  it('has the kernel refuse an agent\'s invocation, and another plugin the environments plugin\'s mounts', async () => {
    // A plugin granted executions.workspace that asks on an agent's behalf: the kernel itself refuses.
    const folder = await pluginVariant(join(import.meta.dirname, '../../host/fixtures/cap-probe'), (manifest) => {
      manifest.key = 'ws-probe';
      manifest.capabilities.push({ id: 'executions.workspace', reason: 'Asks the kernel directly' });
      manifest.routes[0].auth = 'any';
    });
    const key = await installAndEnable(t, folder);
    await mkdir(join(mountA, 'probe'), { recursive: true });
    const input = { purpose: 'command', workspaceRef: 'probe', label: 'Probe', cwd: join(mountA, 'probe'), command: '/bin/true' };
    const agentApi = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, company.id, { name: 'Prober' })).id));
    const probe = async (api: Api) => (await api.post(`/api/plugins/${key}/companies/${company.id}/probe`, { member: 'workspaceProcesses', method: 'start', args: [input] })).body;
    expect(await probe(agentApi)).toMatchObject({ ok: false, error: { status: 403, code: 'board_user_required' } });
    expect(await probe(managerApi)).toMatchObject({ ok: false, error: { status: 403, code: 'board_user_required' } });
    // A board user, but the folder is mounted for the environments plugin, not for this one.
    expect(await probe(t.api)).toMatchObject({ ok: false, error: { status: 403, code: 'workspace_cwd_not_mounted' } });
    // Variables the loader or an interpreter reads are refused by the kernel too, whatever the plugin let through.
    for (const name of ['LD_PRELOAD', 'NODE_OPTIONS', 'PATH']) {
      const answer = (await t.api.post(`/api/plugins/${key}/companies/${company.id}/probe`, { member: 'workspaceProcesses', method: 'start', args: [{ ...input, env: { [name]: '/tmp/x' } }] })).body;
      expect(answer, name).toMatchObject({ ok: false, error: { status: 422, code: 'workspace_env_refused' } });
    }
    const { rows } = await t.sql.query("select count(*)::int as n from executions where plugin = 'ws-probe'");
    expect(rows[0].n).toBe(0);
  });

  it('refuses a cwd outside the mounted folder, a link out of it, and one that does not exist', async () => {
    const outside = join(world.base, 'b', 'theirs');
    await mkdir(outside, { recursive: true });
    await symlink(outside, join(mountA, 'escape'));
    for (const [cwd, status, code] of [
      [outside, 403, 'workspace_cwd_not_mounted'],
      [join(mountA, 'escape'), 403, 'workspace_cwd_not_mounted'],
      [join(mountA, 'missing'), 422, 'workspace_cwd_missing'],
    ] as Array<[string, number, string]>) {
      const source = (await t.api.post(`/api/projects/${project.id}/workspaces`, { name: `cwd-${code}`, cwd })).body;
      const ws = (await t.api.post(`/api/companies/${company.id}/execution-workspaces`, { projectWorkspaceId: source.id })).body;
      await t.api.patch(`/api/execution-workspaces/${ws.id}`, { workspaceCommands: [COMMAND] });
      const res = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-commands/run`, { workspaceCommandId: 'build' });
      expect(res.status, `${cwd} ${res.text}`).toBe(status);
      expect(res.body).toMatchObject({ code, error: expect.any(String) });
      expect(await operations(ws.id)).toHaveLength(2);
    }
  });

  it('answers the workspace refusals and unknown targets plainly', async () => {
    const ws = await workspace('targets');
    for (const [path, body, status, code] of [
      ['runtime-services/start', { runtimeServiceId: 'nope' }, 422, 'runtime_service_not_found'],
      ['runtime-services/start', { serviceIndex: 5 }, 422, 'runtime_service_not_found'],
      ['runtime-commands/run', {}, 422, 'workspace_command_required'],
      ['runtime-commands/run', { workspaceCommandId: 'nope' }, 422, 'workspace_command_not_found'],
      ['runtime-services/repair', {}, 404, 'not_found'],
      ['runtime-commands/explode', {}, 404, 'not_found'],
      ['runtime-commands/run', { command: 'rm -rf /' }, 400, 'validation_failed'],
    ] as Array<[string, Record<string, unknown>, number, string]>) {
      const res = await t.api.post(`/api/execution-workspaces/${ws.id}/${path}`, body);
      expect(res.status, `${path} ${res.text}`).toBe(status);
      expect(res.body).toMatchObject({ code });
    }
    const noPath = (await t.api.post(`/api/projects/${project.id}/workspaces`, { name: 'no path', repoUrl: 'https://git.example.com/acme/x' })).body;
    const pathless = (await t.api.post(`/api/companies/${company.id}/execution-workspaces`, { projectWorkspaceId: noPath.id })).body;
    expect((await t.api.post(`/api/execution-workspaces/${pathless.id}/runtime-commands/run`, { workspaceCommandId: 'build' })).body).toMatchObject({ code: 'workspace_path_required' });
  });

  it('stops a service from the other Keel process', async () => {
    const ws = await workspace('two-processes');
    const started = await t.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, { runtimeServiceId: 'web' });
    expect(started.status, started.text).toBe(202);
    const executionId = started.body.runtimeService.executionId;
    const pids = await until('its processes appear', async () => processesOf(executionId), (found) => found.length > 0);
    const stopped = await peer.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/stop`, { runtimeServiceId: 'web' });
    expect(stopped.status, stopped.text).toBe(200);
    expect(stopped.body.runtimeService).toMatchObject({ status: 'stopped', executionId });
    expect(pids.filter(alive)).toEqual([]);
    expect((await services(ws.id, peer.api))[0]).toMatchObject({ status: 'stopped' });
  });

  it('records a service as failed when the Keel process that ran it stops, and kills its processes', async () => {
    const ws = await workspace('peer-dies');
    const started = await peer.api.post(`/api/execution-workspaces/${ws.id}/runtime-services/start`, { runtimeServiceId: 'web' });
    expect(started.status, started.text).toBe(202);
    const executionId = started.body.runtimeService.executionId;
    const pids = await until('its processes appear', async () => processesOf(executionId), (found) => found.length > 0);
    await peer.stop();
    expect(pids.filter(alive)).toEqual([]);
    const [ended] = await until('the service is recorded ended', () => services(ws.id), ([service]) => service.status !== 'running' && service.status !== 'starting');
    expect(ended).toMatchObject({ status: 'failed', executionId, errorCode: 'server_stopped' });
    expect((await t.api.get(`/api/execution-workspaces/${ws.id}/close-readiness`)).body.ready).toBe(true);
  });
});
