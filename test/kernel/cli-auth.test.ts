import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_KEY_PREFIX, hashToken, mintToken } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let t: TestKernel;
let local: TestKernel;
let board: { userId: string; cookie: string };
beforeAll(async () => {
  [t, local] = await Promise.all([startTestKernel({ deploymentMode: 'authenticated' }), startTestKernel()]);
  board = await signUp(t, 'board@example.com');
});
afterAll(async () => { await Promise.all([t?.stop(), local?.stop()]); });

async function signUp(k: TestKernel, email: string): Promise<{ userId: string; cookie: string }> {
  const res = await k.api.post('/api/auth/sign-up', { email, password: 'password-123', name: 'Board Person' });
  const token = /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1];
  return { userId: res.body.user.id, cookie: `keel_session=${token}` };
}

async function challenge(k: TestKernel, body: unknown = { clientName: 'keel cli' }) {
  const res = await k.api.post('/api/cli-auth/challenges', body);
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string; status: string; expiresAt: string; approvePath: string; pollPath: string };
}

const poll = (k: TestKernel, id: string, secret?: string) =>
  k.api.get(`/api/cli-auth/challenges/${id}`, secret ? { headers: { 'X-Challenge-Secret': secret } } : {});

async function dump(k: TestKernel, table: string): Promise<string> {
  return JSON.stringify((await k.sql.query(`select * from ${table}`)).rows);
}

describe('CLI auth challenge flow', () => {
  it('creates a challenge without credentials and shows the secret once', async () => {
    const before = Date.now();
    const res = await t.api.post('/api/cli-auth/challenges', { clientName: 'keel cli', keyName: 'laptop' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const { id, secret } = res.body;
    expect(res.body).toMatchObject({
      status: 'pending', clientName: 'keel cli', keyName: 'laptop',
      approvePath: `/api/cli-auth/challenges/${id}/approve`, pollPath: `/api/cli-auth/challenges/${id}`,
    });
    expect(secret).toMatch(/^svc_cli_[A-Za-z0-9_-]{40,}$/);
    const ttl = new Date(res.body.expiresAt).getTime() - before;
    expect(ttl).toBeGreaterThan(9.5 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000 + 1000);
    const row = (await t.sql.query('select * from cli_auth_challenges where id = $1', [id])).rows[0];
    expect(row.secret_hash).toBe(hashToken(secret));
    expect(await dump(t, 'cli_auth_challenges')).not.toContain(secret);

    const read = await poll(t, id);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id, status: 'pending', clientName: 'keel cli' });
    expect(read.body.secret).toBeUndefined();
    expect(read.body.token).toBeUndefined();
  });

  it('approves from a session, hands the key over exactly once, and never stores it', async () => {
    const { id, secret } = await challenge(t);
    const early = await poll(t, id, secret);
    expect(early.body).toMatchObject({ status: 'pending' });
    expect(early.body.token).toBeUndefined();

    const approved = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { cookie: board.cookie });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ id, status: 'approved', approved: true, userId: board.userId });
    const keyId = approved.body.keyId;
    const key = (await t.sql.query('select * from board_api_keys where id = $1', [keyId])).rows[0];
    expect(key).toMatchObject({ user_id: board.userId, name: 'keel cli', revoked_at: null });
    const activity = (await t.sql.query(`select * from activity_log where action = 'cli_auth.challenge_approved' and entity_id = $1`, [id])).rows;
    expect(activity).toHaveLength(1);
    expect(activity[0]).toMatchObject({ company_id: null, actor_type: 'user', actor_id: board.userId });

    const collected = await poll(t, id, secret);
    expect(collected.status).toBe(200);
    expect(collected.headers.get('cache-control')).toBe('no-store');
    expect(collected.body).toMatchObject({ id, status: 'consumed', keyId, approvedByUserId: board.userId });
    const token = collected.body.token as string;
    expect(token).toMatch(/^svc_board_[A-Za-z0-9_-]{40,}$/);
    expect(hashToken(token)).toBe(key.key_hash);
    expect(token.startsWith(key.key_prefix)).toBe(true);
    for (const table of ['cli_auth_challenges', 'board_api_keys', 'activity_log']) expect(await dump(t, table)).not.toContain(token);
    expect((await t.sql.query('select key_nonce from cli_auth_challenges where id = $1', [id])).rows[0].key_nonce).toBeNull();

    const again = await poll(t, id, secret);
    expect(again.body).toMatchObject({ status: 'consumed' });
    expect(again.body.token).toBeUndefined();

    const me = await t.api.get('/api/cli-auth/me', { token });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      user: { id: board.userId, email: 'board@example.com', name: 'Board Person' }, userId: board.userId,
      companyIds: [], isInstanceAdmin: false, source: 'board_key', keyId,
    });

    const twice = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { cookie: board.cookie });
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({ error: 'Challenge was already approved', code: 'challenge_already_approved' });
  });

  it('accepts the poll secret as ?secret= and refuses a wrong one with 403', async () => {
    const { id, secret } = await challenge(t);
    await t.api.post(`/api/cli-auth/challenges/${id}/approve`, { keyName: 'ci runner' }, { cookie: board.cookie });
    const wrong = await t.api.get(`/api/cli-auth/challenges/${id}?secret=svc_cli_wrong`);
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ error: 'Invalid challenge secret', code: 'invalid_challenge_secret' });
    expect((await t.sql.query('select status from cli_auth_challenges where id = $1', [id])).rows[0].status).toBe('approved');
    const right = await t.api.get(`/api/cli-auth/challenges/${id}?secret=${encodeURIComponent(secret)}`);
    expect(right.body.status).toBe('consumed');
    expect((await t.sql.query('select name from board_api_keys where id = $1', [right.body.keyId])).rows[0].name).toBe('ci runner');
  });

  it('lets only browser sessions and the local board approve', async () => {
    const { id } = await challenge(t);
    const anonymous = await t.api.post(`/api/cli-auth/challenges/${id}/approve`);
    expect(anonymous.status).toBe(401);

    const companyId = (await t.sql.query(`insert into companies (name, issue_prefix) values ('Co', $1) returning id`,
      [`C${randomUUID().slice(0, 8)}`])).rows[0].id;
    const agentId = (await t.sql.query(`insert into agents (company_id, name, url_key) values ($1, 'A', $2) returning id`,
      [companyId, `a-${randomUUID().slice(0, 8)}`])).rows[0].id;
    const agentKey = mintToken(AGENT_KEY_PREFIX);
    await t.sql.query(`insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'k', $3, 'svc_agent_')`,
      [agentId, companyId, hashToken(agentKey)]);
    const agent = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { token: agentKey });
    expect(agent.status).toBe(403);
    expect(agent.body.code).toBe('board_required');

    // A board key cannot mint further keys for itself.
    const first = await challenge(t);
    await t.api.post(`/api/cli-auth/challenges/${first.id}/approve`, undefined, { cookie: board.cookie });
    const boardKey = (await poll(t, first.id, first.secret)).body.token;
    const viaKey = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { token: boardKey });
    expect(viaKey.status).toBe(403);
    expect(viaKey.body.code).toBe('browser_approval_required');

    expect((await t.sql.query('select status, board_api_key_id from cli_auth_challenges where id = $1', [id])).rows[0])
      .toEqual({ status: 'pending', board_api_key_id: null });
  });

  it('answers 404 for unknown or malformed challenge ids', async () => {
    for (const path of [`/api/cli-auth/challenges/${randomUUID()}`, '/api/cli-auth/challenges/nope']) {
      const res = await t.api.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Challenge not found', code: 'not_found' });
    }
    const approve = await t.api.post(`/api/cli-auth/challenges/${randomUUID()}/approve`, undefined, { cookie: board.cookie });
    expect(approve.status).toBe(404);
  });

  it('refuses an invalid create body and creates nothing', async () => {
    const before = await dump(t, 'cli_auth_challenges');
    const res = await t.api.post('/api/cli-auth/challenges', { clientName: 42 });
    expect(res.status).toBe(400);
    expect(res.body.issues[0].path).toBe('clientName');
    expect(await dump(t, 'cli_auth_challenges')).toBe(before);
  });

  it('cancels with the secret or as a board user; a cancelled challenge cannot be approved', async () => {
    const bySecret = await challenge(t);
    expect((await t.api.post(`/api/cli-auth/challenges/${bySecret.id}/cancel`)).status).toBe(401);
    const wrong = await t.api.post(`/api/cli-auth/challenges/${bySecret.id}/cancel`, { secret: 'svc_cli_wrong' });
    expect(wrong.status).toBe(403);
    const cancelled = await t.api.post(`/api/cli-auth/challenges/${bySecret.id}/cancel`, { secret: bySecret.secret });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: bySecret.id, status: 'cancelled', cancelled: true });
    expect((await t.sql.query('select key_nonce from cli_auth_challenges where id = $1', [bySecret.id])).rows[0].key_nonce).toBeNull();
    const approve = await t.api.post(`/api/cli-auth/challenges/${bySecret.id}/approve`, undefined, { cookie: board.cookie });
    expect(approve.status).toBe(409);
    expect(approve.body).toEqual({ error: 'Challenge was cancelled', code: 'challenge_cancelled' });
    expect((await poll(t, bySecret.id, bySecret.secret)).body).toMatchObject({ status: 'cancelled' });

    const byBoard = await challenge(t);
    const denied = await t.api.post(`/api/cli-auth/challenges/${byBoard.id}/cancel`, undefined, { cookie: board.cookie });
    expect(denied.status).toBe(200);
    const logBefore = (await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n;
    const again = await t.api.post(`/api/cli-auth/challenges/${byBoard.id}/cancel`, undefined, { cookie: board.cookie });
    expect(again.status).toBe(200);
    expect((await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n).toBe(logBefore);

    const approvedOne = await challenge(t);
    await t.api.post(`/api/cli-auth/challenges/${approvedOne.id}/approve`, undefined, { cookie: board.cookie });
    const late = await t.api.post(`/api/cli-auth/challenges/${approvedOne.id}/cancel`, { secret: approvedOne.secret });
    expect(late.status).toBe(409);
  });

  it('refuses to approve an expired challenge', async () => {
    const { id, secret } = await challenge(t);
    await t.sql.query(`update cli_auth_challenges set expires_at = now() - interval '1 second' where id = $1`, [id]);
    const keysBefore = await dump(t, 'board_api_keys');
    const res = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { cookie: board.cookie });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'Challenge has expired', code: 'challenge_expired' });
    expect(await dump(t, 'board_api_keys')).toBe(keysBefore);
    expect((await poll(t, id, secret)).body).toMatchObject({ status: 'expired' });
    expect((await t.sql.query('select status, key_nonce from cli_auth_challenges where id = $1', [id])).rows[0])
      .toEqual({ status: 'expired', key_nonce: null });
  });

  it('revokes a key that was approved but never collected before expiry', async () => {
    const { id, secret } = await challenge(t);
    const approved = await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { cookie: board.cookie });
    await t.sql.query(`update cli_auth_challenges set expires_at = now() - interval '1 second' where id = $1`, [id]);
    const late = await poll(t, id, secret);
    expect(late.body).toMatchObject({ status: 'expired' });
    expect(late.body.token).toBeUndefined();
    expect((await t.sql.query('select revoked_at from board_api_keys where id = $1', [approved.body.keyId])).rows[0].revoked_at).not.toBeNull();
  });
});

describe('GET /api/cli-auth/me and POST /api/cli-auth/revoke-current', () => {
  it('revokes the board key the request uses; the key is refused afterwards', async () => {
    const { id, secret } = await challenge(t);
    await t.api.post(`/api/cli-auth/challenges/${id}/approve`, undefined, { cookie: board.cookie });
    const token = (await poll(t, id, secret)).body.token;
    const me = await t.api.get('/api/cli-auth/me', { token });
    expect(me.status).toBe(200);

    const revoked = await t.api.post('/api/cli-auth/revoke-current', undefined, { token });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ revoked: true, keyId: me.body.keyId });
    expect((await t.sql.query('select revoked_at from board_api_keys where id = $1', [me.body.keyId])).rows[0].revoked_at).not.toBeNull();
    expect((await t.sql.query(`select count(*)::int as n from activity_log where action = 'board_api_key.revoked' and entity_id = $1`,
      [me.body.keyId])).rows[0].n).toBe(1);
    expect((await t.api.get('/api/cli-auth/me', { token })).status).toBe(401);
    expect((await t.api.post('/api/cli-auth/revoke-current', undefined, { token })).status).toBe(401);
  });

  it('refuses revoke-current without a board key', async () => {
    const session = await t.api.post('/api/cli-auth/revoke-current', undefined, { cookie: board.cookie });
    expect(session.status).toBe(400);
    expect(session.body).toEqual({
      error: 'This request is not authenticated with a board API key; send the key to revoke as the bearer token', code: 'bad_request',
    });
    expect((await t.api.post('/api/cli-auth/revoke-current')).status).toBe(401);
    const localBoard = await local.api.post('/api/cli-auth/revoke-current');
    expect(localBoard.status).toBe(400);
  });

  it('mints keys without a user for the local board; they carry its full local trust', async () => {
    const companyId = (await local.sql.query(`insert into companies (name, issue_prefix) values ('Local Co', 'LOC') returning id`)).rows[0].id;
    const { id, secret } = await challenge(local);
    const approved = await local.api.post(`/api/cli-auth/challenges/${id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.userId).toBe('local-board');
    expect((await local.sql.query('select user_id from board_api_keys where id = $1', [approved.body.keyId])).rows[0].user_id).toBeNull();
    const token = (await poll(local, id, secret)).body.token;
    const me = await local.api.get('/api/cli-auth/me', { token });
    expect(me.body).toEqual({
      user: { id: 'local-board', email: null, name: 'Local board' }, userId: 'local-board', companyIds: [companyId],
      isInstanceAdmin: true, source: 'board_key', keyId: approved.body.keyId,
    });
    const implicit = await local.api.get('/api/cli-auth/me');
    expect(implicit.body).toMatchObject({ source: 'local_implicit', companyIds: [companyId] });
    expect(implicit.body.keyId).toBeUndefined();
  });
});
