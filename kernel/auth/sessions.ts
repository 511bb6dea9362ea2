import type { Context } from 'koa';
import type { KeelConfig } from '../config/schema.ts';
import { iso, type Queryable } from '../db/database.ts';
import { SESSION_COOKIE } from './resolve-actor.ts';
import { hashToken, mintToken, SESSION_PREFIX } from './tokens.ts';

/**
 * Browser sessions of the authenticated mode. The cookie carries an opaque token; the
 * database keeps only its SHA-256 (user_sessions.token_hash), which is what actor
 * resolution looks up.
 */
export const DEFAULT_SESSION_TTL_HOURS = 720;

export interface CreatedSession {
  id: string;
  token: string;
  expiresAt: string;
}

export function sessionTtlHours(config: KeelConfig): number {
  return config.auth.sessionTtlHours ?? DEFAULT_SESSION_TTL_HOURS;
}

export async function createSession(db: Queryable, config: KeelConfig, userId: string): Promise<CreatedSession> {
  const token = mintToken(SESSION_PREFIX);
  const row = await db.maybeOne<{ id: string; expires_at: string }>(
    `insert into user_sessions (user_id, token_hash, expires_at)
     values (?, ?, now() + make_interval(hours => ?)) returning id, expires_at`,
    [userId, hashToken(token), sessionTtlHours(config)],
  );
  return { id: row!.id, token, expiresAt: iso(row!.expires_at)! };
}

/** Deletes the session a cookie names; returns its id and user, or undefined when there was none. */
export async function deleteSession(db: Queryable, token: string): Promise<{ id: string; userId: string } | undefined> {
  const row = await db.maybeOne<{ id: string; user_id: string }>(
    'delete from user_sessions where token_hash = ? returning id, user_id', [hashToken(token)]);
  return row ? { id: row.id, userId: row.user_id } : undefined;
}

/**
 * Written by hand rather than through ctx.cookies: Koa refuses to set a Secure cookie on
 * a plain-HTTP connection, which is exactly the case behind a TLS-terminating proxy.
 */
export function setSessionCookie(ctx: Context, config: KeelConfig, token: string): void {
  ctx.append('Set-Cookie', cookie(config, token, sessionTtlHours(config) * 3600));
}

export function clearSessionCookie(ctx: Context, config: KeelConfig): void {
  ctx.append('Set-Cookie', cookie(config, '', 0));
}

function cookie(config: KeelConfig, value: string, maxAgeSeconds: number): string {
  const parts = [`${SESSION_COOKIE}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (maxAgeSeconds === 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (config.auth.publicBaseUrl?.startsWith('https://')) parts.push('Secure');
  return parts.join('; ');
}
