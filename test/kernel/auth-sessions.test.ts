import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let t: TestKernel;
let local: TestKernel;
beforeAll(async () => {
  [t, local] = await Promise.all([startTestKernel({ deploymentMode: 'authenticated' }), startTestKernel()]);
});
afterAll(async () => { await Promise.all([t?.stop(), local?.stop()]); });

function sessionCookie(headers: Headers): { header: string; token: string; cookie: string } {
  const header = headers.get('set-cookie') ?? '';
  const token = /keel_session=([^;]*)/.exec(header)?.[1] ?? '';
  return { header, token, cookie: `keel_session=${token}` };
}

async function count(k: TestKernel, sql: string, params: unknown[] = []): Promise<number> {
  return Number((await k.sql.query(`select count(*)::int as n from ${sql}`, params)).rows[0].n);
}

describe('browser sessions (authenticated mode)', () => {
  it('signs up: 201, user and session stored hashed, cookie set, activity written', async () => {
    const res = await t.api.post('/api/auth/sign-up', { email: 'Ada@Example.com', password: 'correct horse', name: 'Ada' });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email: 'Ada@Example.com', name: 'Ada', isInstanceAdmin: false });
    expect(res.body.session.id).toEqual(expect.any(String));
    const { header, token } = sessionCookie(res.headers);
    expect(token).toMatch(/^svc_session_[A-Za-z0-9_-]{40,}$/);
    expect(header).toContain('HttpOnly');
    expect(header).toContain('SameSite=Lax');
    expect(header).toContain('Path=/');
    expect(header).toContain('Max-Age=2592000');
    expect(header).not.toContain('Secure');

    const user = (await t.sql.query('select * from users where id = $1', [res.body.user.id])).rows[0];
    expect(user.password_hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(user.password_hash).not.toContain('correct horse');
    const session = (await t.sql.query('select * from user_sessions where id = $1', [res.body.session.id])).rows[0];
    expect(session.token_hash).toBe(hashToken(token));
    expect(session.user_id).toBe(user.id);

    const activity = (await t.sql.query(`select * from activity_log where action = 'user.signed_up' and entity_id = $1`, [user.id])).rows;
    expect(activity).toHaveLength(1);
    expect(activity[0]).toMatchObject({ company_id: null, actor_type: 'user', actor_id: user.id, entity_type: 'user' });
    expect(JSON.stringify(activity[0].details)).not.toContain(token);
  });

  it('GET /api/auth/session answers the cookie user, and 401 without a cookie', async () => {
    const signUp = await t.api.post('/api/auth/sign-up', { email: 'grace@example.com', password: 'hopper-1906' });
    const { cookie } = sessionCookie(signUp.headers);
    const me = await t.api.get('/api/auth/session', { cookie });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ id: signUp.body.user.id, email: 'grace@example.com', name: null });
    expect(me.body.session).toEqual({ id: signUp.body.session.id, expiresAt: signUp.body.session.expiresAt });

    const anonymous = await t.api.get('/api/auth/session');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'No active browser session', code: 'unauthorized' });
    const forged = await t.api.get('/api/auth/session', { cookie: 'keel_session=svc_session_forged' });
    expect(forged.status).toBe(401);
  });

  it('refuses invalid sign-up bodies with 400 and stores nothing', async () => {
    const before = await count(t, 'users');
    const cases: Array<[unknown, string]> = [
      [{ email: 'short@example.com', password: 'seven77' }, 'password'],
      [{ email: 'not-an-email', password: 'long enough' }, 'email'],
      [{ password: 'long enough' }, 'email'],
      [{ email: 'x@example.com' }, 'password'],
      [{ email: 'x@example.com', password: 'long enough', name: 5 }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await t.api.post('/api/auth/sign-up', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(field);
    }
    const notJson = await t.api.post('/api/auth/sign-up', undefined, { rawBody: '[1]', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(await count(t, 'users')).toBe(before);
    expect(await count(t, 'user_sessions where user_id in (select id from users where email = $1)', ['x@example.com'])).toBe(0);
  });

  it('refuses a duplicate email (case-insensitive) with 409', async () => {
    await t.api.post('/api/auth/sign-up', { email: 'dup@example.com', password: 'password-1' });
    const before = await count(t, 'users');
    const res = await t.api.post('/api/auth/sign-up', { email: 'DUP@example.com', password: 'password-2' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'A user with this email already exists', code: 'email_taken' });
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(await count(t, 'users')).toBe(before);
  });

  it('signs in with the right password only, answering one generic 401 otherwise', async () => {
    await t.api.post('/api/auth/sign-up', { email: 'linus@example.com', password: 'penguins!' });
    const sessionsBefore = await count(t, 'user_sessions');
    const wrongPassword = await t.api.post('/api/auth/sign-in', { email: 'linus@example.com', password: 'penguins?' });
    const unknownUser = await t.api.post('/api/auth/sign-in', { email: 'nobody@example.com', password: 'penguins!' });
    for (const res of [wrongPassword, unknownUser]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Invalid email or password', code: 'unauthorized' });
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    const missing = await t.api.post('/api/auth/sign-in', { email: 'linus@example.com' });
    expect(missing.status).toBe(400);
    expect(await count(t, 'user_sessions')).toBe(sessionsBefore);

    const ok = await t.api.post('/api/auth/sign-in', { email: 'LINUS@example.com', password: 'penguins!' });
    expect(ok.status).toBe(200);
    expect(ok.body.user.email).toBe('linus@example.com');
    const { cookie } = sessionCookie(ok.headers);
    expect((await t.api.get('/api/auth/session', { cookie })).body.user.id).toBe(ok.body.user.id);
    expect(await count(t, 'user_sessions')).toBe(sessionsBefore + 1);
  });

  it('signs out: deletes the session row, clears the cookie and the cached session', async () => {
    const signUp = await t.api.post('/api/auth/sign-up', { email: 'leaving@example.com', password: 'goodbye-now' });
    const { cookie, token } = sessionCookie(signUp.headers);
    // Resolve once so that the session sits in the auth cache.
    expect((await t.api.get('/api/auth/session', { cookie })).status).toBe(200);

    const out = await t.api.post('/api/auth/sign-out', undefined, { cookie });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ signedOut: true });
    expect(out.headers.get('set-cookie')).toMatch(/keel_session=;.*Max-Age=0/);
    expect(await count(t, 'user_sessions where token_hash = $1', [hashToken(token)])).toBe(0);
    expect((await t.api.get('/api/auth/session', { cookie })).status).toBe(401);
    const activity = await count(t, `activity_log where action = 'user.signed_out' and actor_id = $1`, [signUp.body.user.id]);
    expect(activity).toBe(1);

    // Signing out again changes nothing and writes nothing.
    const logBefore = await count(t, 'activity_log');
    const again = await t.api.post('/api/auth/sign-out', undefined, { cookie });
    expect(again.status).toBe(200);
    expect(await count(t, 'activity_log')).toBe(logBefore);
  });

  it('marks the cookie Secure and uses sessionTtlHours when the public base URL is https', async () => {
    const secure = await startTestKernel({
      deploymentMode: 'authenticated',
      auth: { baseUrlMode: 'explicit', publicBaseUrl: 'https://keel.example.com', sessionTtlHours: 2 },
    });
    try {
      const res = await secure.api.post('/api/auth/sign-up', { email: 'tls@example.com', password: 'secure-cookie' });
      expect(res.status).toBe(201);
      const { header } = sessionCookie(res.headers);
      expect(header).toContain('Secure');
      expect(header).toContain('Max-Age=7200');
      const hours = (new Date(res.body.session.expiresAt).getTime() - Date.now()) / 3_600_000;
      expect(hours).toBeGreaterThan(1.9);
      expect(hours).toBeLessThanOrEqual(2);
    } finally {
      await secure.stop();
    }
  });
});

describe('browser sessions in local_trusted mode', () => {
  it('answers 404 browser_auth_unavailable on every session route and creates nothing', async () => {
    const calls = [
      () => local.api.post('/api/auth/sign-up', { email: 'a@example.com', password: 'password-1' }),
      () => local.api.post('/api/auth/sign-in', { email: 'a@example.com', password: 'password-1' }),
      () => local.api.post('/api/auth/sign-out'),
      () => local.api.get('/api/auth/session'),
    ];
    for (const call of calls) {
      const res = await call();
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: 'Browser sign-in is not available in local_trusted mode: every local request already acts as the local board',
        code: 'browser_auth_unavailable',
      });
    }
    expect(await count(local, 'users')).toBe(0);
    expect(await count(local, 'activity_log')).toBe(0);
  });
});
