import type { WorkContext } from './context.ts';
import { traceJson } from './feedback.ts';

type Row = Record<string, unknown>;

/** Traces one run delivers at most; each gets at most DELIVERY_TIMEOUT_MS, so a run ends within the job's minute. */
const BATCH = 10;
const DELIVERY_TIMEOUT_MS = 5000;
/** Attempts of one trace before it is `failed`; the next attempt waits 1, 2, 4 ... minutes. */
export const MAX_DELIVERY_ATTEMPTS = 3;

/** What the endpoint receives: the trace with its snapshot, without the voter's user id (an id of this instance only). */
function deliveryBody(row: Row): string {
  const { voterUserId: _voter, ...trace } = traceJson(row, true);
  return JSON.stringify({ trace });
}

/**
 * The `deliver-feedback` job, run every minute in each company: sends the company's due `pending`
 * traces to the instance's feedback-sharing endpoint, but only while the company consents
 * (`feedbackDataSharingEnabled`, set by a board user) and an endpoint is set. The traces are
 * claimed `for update skip locked` in the run's transaction and their outcome is written in the
 * same transaction: a run in another Keel process skips the claimed rows and, once this one
 * commits, no longer finds them pending, so no trace is sent by two runs. The request goes through
 * `ctx.http.fetch`, checked like every outbound call (the endpoint's host must be opened to this
 * plugin by the operator). The trace id is sent as `Idempotency-Key`, for a receiver to drop a
 * repeat should a commit fail after the endpoint answered.
 */
export async function deliverFeedback(ctx: WorkContext): Promise<void> {
  const companyId = ctx.invocation.companyId;
  if (!companyId) return;
  const endpoint = (await ctx.instanceSettings.get('general')).feedbackDataSharingEndpoint;
  if (typeof endpoint !== 'string' || endpoint === '') return;
  const company = await ctx.companies.get(companyId);
  if (company?.feedbackDataSharingEnabled !== true) return;
  const { rows } = await ctx.db.query(
    `select * from feedback_traces where company_id = $1 and status = 'pending' and (next_delivery_at is null or next_delivery_at <= now())
      order by created_at, id limit $2 for update skip locked`, [companyId, BATCH]);
  for (const row of rows) {
    const error = await send(ctx, endpoint, row);
    const attempts = Number(row.delivery_attempts) + 1;
    const status = error === null ? 'sent' : attempts >= MAX_DELIVERY_ATTEMPTS ? 'failed' : 'pending';
    await ctx.db.query(
      `update feedback_traces set status = $2, delivery_attempts = $3, last_delivery_error = $4,
              sent_at = case when $2 = 'sent' then now() end,
              next_delivery_at = case when $2 = 'pending' then now() + (2 ^ ($3::int - 1)) * interval '1 minute' end
        where id = $1`, [row.id, status, attempts, error]);
    if (status !== 'pending') {
      await ctx.activity.record({
        action: status === 'sent' ? 'feedback.trace_sent' : 'feedback.trace_failed', entityType: 'feedback_trace', entityId: String(row.id),
        details: { issueId: row.issue_id, identifier: row.issue_identifier, attempts, ...(error === null ? {} : { error }) },
      });
    }
  }
}

/** Null when the endpoint accepted the trace (2xx), else what went wrong, for `lastDeliveryError`. */
async function send(ctx: WorkContext, endpoint: string, row: Row): Promise<string | null> {
  try {
    const res = await ctx.http.fetch(endpoint, {
      method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': String(row.id) }, body: deliveryBody(row), timeoutMs: DELIVERY_TIMEOUT_MS,
    });
    return res.status >= 200 && res.status < 300 ? null : `The endpoint answered HTTP ${res.status}`;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    return `${code ?? 'fetch_failed'}: ${message ?? String(error)}`.slice(0, 500);
  }
}
