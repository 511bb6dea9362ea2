import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import type { WebsiteContext } from './context.ts';

const DEFAULTS = { windowSeconds: 3600, perAddress: 3, perClient: 20 };

type Limits = typeof DEFAULTS;

function limitsOf(ctx: WebsiteContext): Limits {
  const given = (ctx.config.waitlist ?? {}) as Partial<Limits>;
  return { ...DEFAULTS, ...given };
}

/**
 * Counts one request against a fixed window in the database, so every Keel process shares the
 * count; refuses (429) past the limit. The refusal rolls the call back, increment included: the
 * counter holds the accepted requests, which stays at the limit until the window ends.
 */
async function count(ctx: WebsiteContext, scope: 'address' | 'client', subject: string, limit: number, windowSeconds: number): Promise<void> {
  const { rows } = await ctx.db.query<{ count: number; retry_after: number }>(
    `insert into waitlist_counters as c (scope, subject, window_start, count)
       values ($1, $2, to_timestamp(floor(extract(epoch from now()) / $3) * $3), 1)
     on conflict (scope, subject, window_start) do update set count = c.count + 1
     returning c.count, ceil(extract(epoch from c.window_start) + $3 - extract(epoch from now()))::int as retry_after`,
    [scope, subject, windowSeconds]);
  const row = rows[0]!;
  if (row.count > limit) {
    throw new PluginError(429, 'rate_limited', scope === 'address'
      ? 'Too many waitlist requests for this address; try again later'
      : 'Too many waitlist requests from this client; try again later', { scope, retryAfterSeconds: Math.max(1, row.retry_after) });
  }
}

/**
 * POST /api/waitlist/: the host has checked the body (`email` present, an email address, at
 * most 254 characters). An address is stored once, case-insensitively; a repeat answers the
 * same 202, so the answer never tells whether an address was already listed.
 */
export async function joinWaitlist(req: RouteRequest, ctx: WebsiteContext): Promise<{ accepted: true }> {
  const email = (req.body as { email: string }).email.trim();
  const key = email.toLowerCase();
  const limits = limitsOf(ctx);
  // Old windows are of no use to anyone: each request sweeps a few, so the table stays small.
  await ctx.db.query(
    `delete from waitlist_counters where ctid in (select ctid from waitlist_counters where window_start < now() - make_interval(secs => $1) limit 20)`,
    [limits.windowSeconds * 2]);
  if (req.clientKey) await count(ctx, 'client', req.clientKey, limits.perClient, limits.windowSeconds);
  await count(ctx, 'address', key, limits.perAddress, limits.windowSeconds);
  await ctx.db.query('insert into waitlist_entries (address, address_key) values ($1, $2) on conflict (address_key) do nothing', [email, key]);
  return { accepted: true };
}
