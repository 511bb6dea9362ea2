import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApi } from '../support/harness.ts';
import { REPO, runCli } from './cli-support.ts';

/**
 * The CLI and the server as an operator runs them: `kernel/main.ts` in its own process on a data
 * directory whose config.json names a port other than 3100 and authenticated mode, and `keel`
 * given only that data directory (or nothing but KEEL_HOME), never --api-base. The server's
 * own directory has its lock, which names the address; `configOnly` holds the same config.json
 * without a lock, so that what the CLI reads from config.json alone is tested as well.
 */
let home: string;
let configOnly: string;
let port: number;
let server: ChildProcess;
let serverOutput = '';
let adminUrl: string;
let databaseName: string;

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port: free } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return free;
}

beforeAll(async () => {
  adminUrl = inject('adminDatabaseUrl');
  databaseName = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${databaseName} template keel_template`);
  await admin.end();
  home = await mkdtemp(join(tmpdir(), 'keel-cli-server-'));
  port = await freePort();
  await writeFile(join(home, 'config.json'), JSON.stringify({
    deploymentMode: 'authenticated',
    server: { host: '0.0.0.0', port },
    database: { url: adminUrl.replace(/\/[^/]*$/, `/${databaseName}`) },
  }));
  configOnly = await mkdtemp(join(tmpdir(), 'keel-cli-config-'));
  await writeFile(join(configOnly, 'config.json'), JSON.stringify({ server: { host: '0.0.0.0', port } }));
  server = spawn(process.execPath, ['--no-node-snapshot', 'kernel/main.ts', '--data-dir', home], {
    cwd: REPO, env: { PATH: process.env.PATH, HOME: process.env.HOME, KEEL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout!.on('data', (chunk: Buffer) => { serverOutput += chunk.toString(); });
  server.stderr!.on('data', (chunk: Buffer) => { serverOutput += chunk.toString(); });
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => { if (/listening on http/.test(serverOutput)) { clearInterval(timer); resolve(); } }, 50);
    server.once('exit', (code) => { clearInterval(timer); reject(new Error(`the server exited with ${code}: ${serverOutput}`)); });
  });
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGINT');
    await exited;
  }
  if (home) await rm(home, { recursive: true, force: true });
  if (configOnly) await rm(configOnly, { recursive: true, force: true });
  if (databaseName) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${databaseName} with (force)`).catch(() => undefined);
    await admin.end();
  }
});

/** Follows the hint the CLI prints: sign up, claim the instance, approve a CLI auth challenge, collect the key. */
async function boardKey(): Promise<string> {
  const api = createApi(`http://127.0.0.1:${port}`);
  const signUp = await api.post('/api/auth/sign-up', { email: 'operator@example.com', password: 'password-123' });
  expect(signUp.status).toBe(201);
  const cookie = `keel_session=${/keel_session=([^;]*)/.exec(signUp.headers.get('set-cookie') ?? '')![1]}`;
  expect((await api.post('/api/bootstrap/claim', undefined, { cookie })).status).toBe(200);
  const challenge = await api.post('/api/cli-auth/challenges', { clientName: 'keel' });
  expect(challenge.status).toBe(201);
  expect((await api.post(`/api/cli-auth/challenges/${challenge.body.id}/approve`, undefined, { cookie })).status).toBe(200);
  const collected = await api.get(`/api/cli-auth/challenges/${challenge.body.id}`, { headers: { 'X-Challenge-Secret': challenge.body.secret } });
  expect(collected.body.token).toMatch(/^svc_board_/);
  return collected.body.token as string;
}

describe('keel finds the server of a data directory', () => {
  it('reaches the port named in config.json, and a 401 in authenticated mode tells how to get a key', async () => {
    const result = await runCli(['plugin', 'list'], { env: { KEEL_HOME: configOnly } });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toBe('Error: Authentication required (unauthorized, HTTP 401)');
    expect(lines[1]).toBe('This server runs in authenticated mode and needs an API key.');
    expect(lines[2]).toBe('Get a board API key with: keel auth login (a board user signed in to the server approves it),');
    expect(result.stderr).toContain('--api-key <key> or KEEL_API_KEY');
    expect(result.stderr).toContain('docs/api/auth.md');
    const json = await runCli(['plugin', 'list', '--json', '--data-dir', configOnly]);
    expect(JSON.parse(json.stderr)).toMatchObject({ code: 'unauthorized', status: 401, hint: expect.arrayContaining([expect.stringContaining('--api-key')]) });
  });

  it("reaches the server running on a data directory at the address in the directory's lock", async () => {
    // PORT names nothing that listens: the running server's own record of its address wins.
    const result = await runCli(['plugin', 'list', '--json'], { env: { KEEL_HOME: home, PORT: String(await freePort()) } });
    expect(JSON.parse(result.stderr)).toMatchObject({ code: 'unauthorized', status: 401 });
  });

  it('works with the key obtained as the hint says, from --api-key or KEEL_API_KEY', async () => {
    const key = await boardKey();
    const listed = await runCli(['plugin', 'list', '--data-dir', home, '--api-key', key]);
    expect(listed.code, listed.stderr).toBe(0);
    // The server installs its first-party plugins (plugins/costs) at first start.
    expect(listed.stdout).toMatch(/^KEY\s+VERSION\s+STATUS\s+RUNNING\s+SOURCE\n/);
    expect(listed.stdout).toMatch(/\ncosts\s+/);
    const fromEnv = await runCli(['plugin', 'list', '--json'], { env: { KEEL_HOME: home, KEEL_API_KEY: key } });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(JSON.parse(fromEnv.stdout).map((p: { pluginKey: string }) => p.pluginKey)).toContain('costs');
  });

  it('names the address it tried and where it came from when nothing answers there', async () => {
    const idle = await freePort();
    const viaFlag = await runCli(['plugin', 'list', '--data-dir', home, '--port', String(idle)]);
    expect(viaFlag.code).toBe(1);
    expect(viaFlag.stderr.split('\n')[0]).toBe(`Error: No Keel server at http://127.0.0.1:${idle} (ECONNREFUSED; port from --port, host from ${join(home, 'config.json')}); is it running?`);
    const viaEnv = await runCli(['plugin', 'list'], { env: { KEEL_HOME: configOnly, PORT: String(idle) } });
    expect(viaEnv.stderr.split('\n')[0]).toBe(`Error: No Keel server at http://127.0.0.1:${idle} (ECONNREFUSED; port from PORT, host from ${join(configOnly, 'config.json')}); is it running?`);
    const elsewhere = await mkdtemp(join(tmpdir(), 'keel-cli-idle-'));
    try {
      await writeFile(join(elsewhere, 'config.json'), JSON.stringify({ server: { port: idle } }));
      const viaFile = await runCli(['plugin', 'list', '--data-dir', elsewhere]);
      expect(viaFile.stderr).toBe(`Error: No Keel server at http://127.0.0.1:${idle} (ECONNREFUSED; port from ${join(elsewhere, 'config.json')}); is it running?\n`
        + 'Start it with npm start, or name the server as you started it: --data-dir, --port, --host or --api-base.\n');
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});
