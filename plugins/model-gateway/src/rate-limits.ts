import type { GatewayContext } from './context.ts';
import { GatewayRefusal } from './wire-errors.ts';

/**
 * Per-company calls and tokens per minute (the database's clock, so that every Keel process
 * counts the same minute). A call is counted by one conditional upsert, which refuses to count
 * it once the minute is full: concurrent calls on several processes serialise on the row and
 * never overshoot, and a refused call changes nothing. Tokens are added when calls finish
 * (proxy.finished), so a tokens limit refuses the calls after the one that crossed it.
 */
export async function countCall(ctx: GatewayContext, companyId: string, callsPerMinute: number | null, tokensPerMinute: number | null): Promise<void> {
  if (callsPerMinute === null && tokensPerMinute === null) return;
  const { rows } = await ctx.db.query(
    `insert into minute_counters (company_id, minute, calls) values ($1, date_trunc('minute', now()), 1)
     on conflict (company_id, minute) do update set calls = minute_counters.calls + 1
       where ($2::integer is null or minute_counters.calls < $2::integer) and ($3::bigint is null or minute_counters.tokens < $3::bigint)
     returning calls`,
    [companyId, callsPerMinute, tokensPerMinute]);
  if (rows.length > 0) return;
  const { rows: full } = await ctx.db.query(
    `select calls, tokens, ceil(extract(epoch from (minute + interval '1 minute' - now())))::integer as seconds_left
       from minute_counters where company_id = $1 and minute = date_trunc('minute', now())`, [companyId]);
  const row = full[0] ?? { calls: 0, tokens: 0, seconds_left: 60 };
  const retryAfter = Math.max(1, Number(row.seconds_left));
  const tokensFull = tokensPerMinute !== null && Number(row.tokens) >= tokensPerMinute;
  const message = tokensFull
    ? `This company's limit of ${tokensPerMinute} tokens per minute through the Keel model gateway is reached; retry in ${retryAfter} s`
    : `This company's limit of ${callsPerMinute} calls per minute through the Keel model gateway is reached; retry in ${retryAfter} s`;
  throw new GatewayRefusal('rate_limited', tokensFull ? 'tokens_per_minute_exceeded' : 'calls_per_minute_exceeded', message, retryAfter);
}

/** Adds a finished call's tokens to its company's current minute, and drops minutes long past. */
export async function addTokens(ctx: GatewayContext, companyId: string, tokens: number): Promise<void> {
  await ctx.db.query(
    `insert into minute_counters (company_id, minute, tokens) values ($1, date_trunc('minute', now()), $2)
     on conflict (company_id, minute) do update set tokens = minute_counters.tokens + excluded.tokens`,
    [companyId, tokens]);
  await ctx.db.query(`delete from minute_counters where company_id = $1 and minute < now() - interval '1 hour'`, [companyId]);
}
