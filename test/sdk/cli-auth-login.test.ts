import { statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { runCli, startCli } from './cli-support.ts';

/**
 * `keel auth login` against a kernel in authenticated mode: the CLI opens a command-line auth
 * challenge, a board user approves it with a browser session, and the CLI stores the board API
 * key it receives; later commands use it, and logout revokes it.
 */
let t: TestKernel;
let home: string;
let cookie: string;

const keel = (args: string[], env: Record<string, string> = {}) => runCli([...args, '--api-base', t.url, '--data-dir', join(home, 'keel')], { env: { HOME: home, ...env } });

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  home = await mkdtemp(join(tmpdir(), 'keel-cli-login-'));
  const res = await t.api.post('/api/auth/sign-up', { email: 'board@example.test', password: 'password-123', name: 'Board Person' });
  cookie = `keel_session=${/keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]}`;
});
afterAll(async () => {
  await t?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('keel auth login', { timeout: 120_000 }, () => {
  it('without a key, a command gets 401 and is told how to log in', async () => {
    const result = await keel(['company', 'list']);
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n').slice(0, 3)).toEqual([
      'Error: Authentication required (unauthorized, HTTP 401)',
      'This server runs in authenticated mode and needs an API key.',
      'Get a board API key with: keel auth login (a board user signed in to the server approves it),',
    ]);
  });

  it('waits for the approval, stores the key it hands over, and later commands use it', async () => {
    const login = startCli(['auth', 'login', '--json', '--interval', '0.2', '--api-base', t.url, '--data-dir', join(home, 'keel')], { env: { HOME: home } });
    try {
      const challenge = await login.waitFor((e) => e.event === 'challenge', { timeoutMs: 30_000 });
      expect(challenge).toEqual({ event: 'challenge', challengeId: expect.any(String), approveUrl: `${t.url}/api/cli-auth/challenges/${challenge.challengeId}/approve`, browserUrl: `${t.url}/cli-auth/${challenge.challengeId}`, expiresAt: expect.any(String) });
      const approved = await t.api.post(`/api/cli-auth/challenges/${challenge.challengeId}/approve`, undefined, { cookie });
      expect(approved.status, approved.text).toBe(200);
      const done = await login.waitFor((e) => e.event === 'logged_in', { timeoutMs: 30_000 });
      const file = join(home, 'keel', 'credentials.json');
      expect(done).toEqual({
        event: 'logged_in', apiBase: t.url, userId: approved.body.userId, email: 'board@example.test', isInstanceAdmin: false, companyIds: [],
        keyId: approved.body.keyId, savedTo: file,
      });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const stored = JSON.parse(await readFile(file, 'utf8'));
      expect(stored.servers[t.url]).toEqual({ token: expect.stringMatching(/^svc_board_/), keyId: approved.body.keyId, userId: approved.body.userId, savedAt: expect.any(String) });
      expect(JSON.stringify(login.events)).not.toContain(stored.servers[t.url].token);
    } finally {
      await login.stop();
    }

    const whoami = JSON.parse((await keel(['auth', 'whoami', '--json'])).stdout);
    expect(whoami).toMatchObject({ userId: expect.any(String), source: 'board_key' });
    const created = await keel(['company', 'create', '--name', 'Logged In Co', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const shown = JSON.parse((await keel(['context', 'show', '--json'])).stdout);
    expect(shown.resolved.apiKeySource).toBe(`keel auth login (${join(home, 'keel', 'credentials.json')})`);
  });

  it('logout revokes the key on the server and forgets it', async () => {
    const stored = JSON.parse(await readFile(join(home, 'keel', 'credentials.json'), 'utf8')).servers[t.url].token;
    const logout = await keel(['auth', 'logout', '--json']);
    expect(JSON.parse(logout.stdout)).toEqual({ apiBase: t.url, revoked: true, keyId: expect.any(String), forgotten: true });
    expect((await t.api.get('/api/companies', { token: stored })).status).toBe(401);
    expect((await keel(['company', 'list'])).code).toBe(1);
    const again = await keel(['auth', 'logout']);
    expect(again).toMatchObject({ code: 1, stderr: `Error: No board API key for ${t.url}: nothing to log out of (not_logged_in)\n` });
  });

  it('a refused key is named with where it came from', async () => {
    const result = await keel(['company', 'list'], { KEEL_API_KEY: 'svc_board_not-a-key' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('The server refused the API key from --api-key or KEEL_API_KEY (unknown or revoked).');
  });

  it('a cancelled challenge ends the wait with an error', async () => {
    const login = startCli(['auth', 'login', '--json', '--interval', '0.2', '--api-base', t.url, '--data-dir', join(home, 'keel')], { env: { HOME: home } });
    try {
      const challenge = await login.waitFor((e) => e.event === 'challenge', { timeoutMs: 30_000 });
      const cancelled = await t.api.post(`/api/cli-auth/challenges/${challenge.challengeId}/cancel`, undefined, { cookie });
      expect(cancelled.status).toBe(200);
      const code = login.child.exitCode ?? await new Promise<number | null>((resolve) => login.child.once('exit', resolve));
      expect(code).toBe(1);
      expect(JSON.parse(login.stderr())).toEqual({ error: 'The challenge was cancelled before the key was handed over; run keel auth login again', code: 'challenge_cancelled' });
    } finally {
      await login.stop();
    }
  });
});
