import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOARD_KEY_PREFIX, hashToken, mintToken } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let authed: TestKernel;
beforeAll(async () => { authed = await startTestKernel({ deploymentMode: 'authenticated' }); });
afterAll(async () => { await authed?.stop(); });

async function signUp(k: TestKernel, email: string): Promise<{ userId: string; cookie: string }> {
  const res = await k.api.post('/api/auth/sign-up', { email, password: 'password-123' });
  expect(res.status).toBe(201);
  const token = /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1];
  return { userId: res.body.user.id, cookie: `keel_session=${token}` };
}

const NOT_AVAILABLE = { error: 'Browser first-admin claim is not available', code: 'claim_not_available' };

describe('POST /api/bootstrap/claim', () => {
  it('is not available in local_trusted mode', async () => {
    const local = await startTestKernel();
    try {
      const res = await local.api.post('/api/bootstrap/claim');
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_AVAILABLE);
      expect((await local.sql.query('select count(*)::int as n from instance_claims')).rows[0].n).toBe(0);
    } finally {
      await local.stop();
    }
  });

  it('is not available on a publicly exposed instance', async () => {
    const pub = await startTestKernel({
      deploymentMode: 'authenticated', server: { exposure: 'public' }, auth: { baseUrlMode: 'explicit', publicBaseUrl: 'https://keel.example.com' },
    });
    try {
      const user = await signUp(pub, 'public@example.com');
      const res = await pub.api.post('/api/bootstrap/claim', undefined, { cookie: user.cookie });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_AVAILABLE);
      expect((await pub.sql.query('select is_instance_admin from users where id = $1', [user.userId])).rows[0].is_instance_admin).toBe(false);
    } finally {
      await pub.stop();
    }
  });

  it('needs a browser session: anonymous callers and board API keys get 401', async () => {
    const res = await authed.api.post('/api/bootstrap/claim');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Sign in from a browser session before claiming first admin', code: 'browser_session_required' });

    const keyUser = await signUp(authed, 'key-holder@example.com');
    const key = mintToken(BOARD_KEY_PREFIX);
    await authed.sql.query(`insert into board_api_keys (user_id, name, key_hash, key_prefix) values ($1, 'cli', $2, 'svc_board_')`,
      [keyUser.userId, hashToken(key)]);
    const viaKey = await authed.api.post('/api/bootstrap/claim', undefined, { token: key });
    expect(viaKey.status).toBe(401);
    expect((await authed.sql.query('select count(*)::int as n from instance_claims')).rows[0].n).toBe(0);
  });

  it('makes the first session user instance admin; later claims get 409', async () => {
    const first = await signUp(authed, 'first@example.com');
    // Cache the user as a non-admin first, so the claim must evict it.
    expect((await authed.api.get('/api/cli-auth/me', { cookie: first.cookie })).body.isInstanceAdmin).toBe(false);

    const res = await authed.api.post('/api/bootstrap/claim', undefined, { cookie: first.cookie });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ claimed: true, userId: first.userId });
    expect((await authed.sql.query('select is_instance_admin from users where id = $1', [first.userId])).rows[0].is_instance_admin).toBe(true);
    expect((await authed.sql.query('select user_id from instance_claims')).rows).toEqual([{ user_id: first.userId }]);
    expect((await authed.api.get('/api/cli-auth/me', { cookie: first.cookie })).body.isInstanceAdmin).toBe(true);
    const entry = (await authed.sql.query(`select * from activity_log where action = 'instance.admin_claimed'`)).rows;
    expect(entry).toHaveLength(1);
    expect(entry[0]).toMatchObject({ company_id: null, actor_type: 'user', actor_id: first.userId, entity_type: 'user', entity_id: first.userId });
    // Now an instance admin: may write instance settings.
    expect((await authed.api.patch('/api/instance/settings/general', { instanceName: 'Mine' }, { cookie: first.cookie })).status).toBe(200);

    const second = await signUp(authed, 'second@example.com');
    for (const who of [second, first]) {
      const again = await authed.api.post('/api/bootstrap/claim', undefined, { cookie: who.cookie });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: 'Someone else has already claimed this instance', code: 'instance_already_claimed' });
    }
    expect((await authed.sql.query('select count(*)::int as n from users where is_instance_admin')).rows[0].n).toBe(1);
  });

  it('lets exactly one of many concurrent claims win', async () => {
    const fresh = await startTestKernel({ deploymentMode: 'authenticated' });
    try {
      const users = await Promise.all(Array.from({ length: 8 }, (_, i) => signUp(fresh, `racer${i}@example.com`)));
      const results = await Promise.all(users.map((u) => fresh.api.post('/api/bootstrap/claim', undefined, { cookie: u.cookie })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      const winner = results.find((r) => r.status === 200)!.body.userId;
      expect((await fresh.sql.query('select id from users where is_instance_admin')).rows).toEqual([{ id: winner }]);
    } finally {
      await fresh.stop();
    }
  });

  it('answers 409 when an instance admin already exists without a claim', async () => {
    const fresh = await startTestKernel({ deploymentMode: 'authenticated' });
    try {
      const admin = await signUp(fresh, 'configured-admin@example.com');
      await fresh.sql.query('update users set is_instance_admin = true where id = $1', [admin.userId]);
      const other = await signUp(fresh, 'latecomer@example.com');
      const res = await fresh.api.post('/api/bootstrap/claim', undefined, { cookie: other.cookie });
      expect(res.status).toBe(409);
      expect((await fresh.sql.query('select count(*)::int as n from instance_claims')).rows[0].n).toBe(0);
      expect((await fresh.sql.query('select is_instance_admin from users where id = $1', [other.userId])).rows[0].is_instance_admin).toBe(false);
    } finally {
      await fresh.stop();
    }
  });
});
