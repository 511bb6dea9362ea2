import type { RouteModule } from '../http/app.ts';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { conflict, KeelError, unauthorized } from '../http/errors.ts';
import { actorOf } from '../http/guards.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { SESSION_COOKIE } from './resolve-actor.ts';
import { clearSessionCookie, createSession, deleteSession, setSessionCookie } from './sessions.ts';
import { hashToken } from './tokens.ts';

/**
 * Browser sign-up, sign-in, sign-out and the current session (authenticated mode only).
 * In local_trusted mode every request already is the local board, so these routes answer
 * 404 `browser_auth_unavailable` instead of pretending to log anyone in.
 */
const signUpValidator = bodyValidator<{ email: string; password: string; name?: string | null }>({
  type: 'object',
  required: ['email', 'password'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 320 },
    password: { type: 'string', minLength: 8, maxLength: 1024 },
    name: { type: ['string', 'null'], maxLength: 200 },
  },
});

const signInValidator = bodyValidator<{ email: string; password: string }>({
  type: 'object',
  required: ['email', 'password'],
  properties: {
    email: { type: 'string', minLength: 1, maxLength: 320 },
    password: { type: 'string', minLength: 1, maxLength: 1024 },
  },
});

const INVALID_CREDENTIALS = 'Invalid email or password';

const LOCAL_TRUSTED_404 = 'Answers 404 `browser_auth_unavailable` in local_trusted mode.';

export const sessionRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Auth');

  route({
    method: 'POST', path: '/api/auth/sign-up', auth: 'none', body: signUpValidator, success: 201, errors: [404, 409],
    summary: 'Create a user and sign in (sets the session cookie)', description: LOCAL_TRUSTED_404,
  }, async (ctx, req) => {
    requireBrowserAuth(kernel);
    const body = await req.body();
    const email = body.email.trim();
    const name = body.name?.trim() || null;
    const passwordHash = await hashPassword(body.password);
    const result = await kernel.db.transaction(async (tx) => {
      const taken = await tx.maybeOne('select 1 from users where lower(email) = lower(?)', [email]);
      if (taken) throw emailTaken();
      const user = await tx.maybeOne('insert into users (email, name, password_hash) values (?, ?, ?) returning *', [email, name, passwordHash])
        .catch((error: { code?: string }) => { throw error?.code === '23505' ? emailTaken() : error; });
      const session = await createSession(tx, kernel.config, user!.id);
      await kernel.activity.record(tx, {
        companyId: null, actorType: 'user', actorId: user!.id, action: 'user.signed_up', entityType: 'user', entityId: user!.id,
        runId: actorOf(ctx).runId, details: { email, sessionId: session.id },
      });
      return { user: user!, session };
    });
    ctx.state.activityWritten = true;
    setSessionCookie(ctx, kernel.config, result.session.token);
    ctx.status = 201;
    ctx.body = { user: userView(result.user), session: { id: result.session.id, expiresAt: result.session.expiresAt } };
  });

  route({
    method: 'POST', path: '/api/auth/sign-in', auth: 'none', body: signInValidator, success: 200, errors: [401, 404],
    summary: 'Sign in with email and password (sets the session cookie)', description: LOCAL_TRUSTED_404,
  }, async (ctx, req) => {
    requireBrowserAuth(kernel);
    const body = await req.body();
    const user = await kernel.db.maybeOne('select * from users where lower(email) = lower(?)', [body.email.trim()]);
    // verifyPassword does the full scrypt work even without a user, so timing does not reveal accounts.
    if (!(await verifyPassword(body.password, user?.password_hash)) || !user) throw unauthorized(INVALID_CREDENTIALS);
    const session = await kernel.db.transaction(async (tx) => {
      const created = await createSession(tx, kernel.config, user.id);
      await kernel.activity.record(tx, {
        companyId: null, actorType: 'user', actorId: user.id, action: 'user.signed_in', entityType: 'user', entityId: user.id,
        runId: actorOf(ctx).runId, details: { sessionId: created.id },
      });
      return created;
    });
    ctx.state.activityWritten = true;
    setSessionCookie(ctx, kernel.config, session.token);
    ctx.body = { user: userView(user), session: { id: session.id, expiresAt: session.expiresAt } };
  });

  route({
    method: 'POST', path: '/api/auth/sign-out', auth: 'none', success: 200, errors: [404],
    summary: 'End the browser session of the request, if any (clears the cookie)', description: LOCAL_TRUSTED_404,
  }, async (ctx) => {
    requireBrowserAuth(kernel);
    const token = ctx.cookies.get(SESSION_COOKIE);
    const removed = token ? await kernel.db.transaction(async (tx) => {
      const session = await deleteSession(tx, token);
      if (!session) return undefined;
      await kernel.invalidate(tx, { type: 'credential', hash: hashToken(token) });
      await kernel.activity.record(tx, {
        companyId: null, actorType: 'user', actorId: session.userId, action: 'user.signed_out', entityType: 'user', entityId: session.userId,
        runId: actorOf(ctx).runId, details: { sessionId: session.id },
      });
      return session;
    }) : undefined;
    // Signing out without a live session changes nothing, so there is nothing to audit.
    if (removed) ctx.state.activityWritten = true;
    else ctx.state.skipAudit = true;
    clearSessionCookie(ctx, kernel.config);
    ctx.body = { signedOut: true };
  });

  route({
    method: 'GET', path: '/api/auth/session', auth: 'session', success: 200, errors: [404],
    summary: 'The signed-in user and session', description: LOCAL_TRUSTED_404,
  }, async (ctx) => {
    requireBrowserAuth(kernel);
    const actor = actorOf(ctx);
    if (actor.kind !== 'board' || actor.source !== 'session' || !actor.sessionId) throw unauthorized('No active browser session');
    const row = await currentSession(kernel.db, actor.sessionId);
    if (!row) throw unauthorized('No active browser session');
    ctx.body = { user: userView(row), session: { id: actor.sessionId, expiresAt: iso(row.expires_at) } };
  });
};

function requireBrowserAuth(kernel: KernelServices): void {
  if (kernel.config.deploymentMode === 'local_trusted') {
    throw new KeelError(404, 'browser_auth_unavailable',
      'Browser sign-in is not available in local_trusted mode: every local request already acts as the local board');
  }
}

function emailTaken(): KeelError {
  return conflict('A user with this email already exists', undefined, 'email_taken');
}

async function currentSession(db: Queryable, sessionId: string): Promise<Row | undefined> {
  return db.maybeOne(
    `select u.*, s.expires_at from user_sessions s join users u on u.id = s.user_id
      where s.id = ? and s.expires_at > now()`, [sessionId]);
}

export function userView(row: Row): { id: string; email: string; name: string | null; isInstanceAdmin: boolean; createdAt: string | null } {
  return { id: row.id, email: row.email, name: row.name ?? null, isInstanceAdmin: !!row.is_instance_admin, createdAt: iso(row.created_at) };
}
