import type { Database } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { ExecutionLog } from './execution-log.ts';
import type { Prepared } from './execution-prepare.ts';
import { LIVE, type Finish, type Live } from './execution-rows.ts';
import { runHttp } from './http-runner.ts';
import { claimRemoteRun } from './remote-run-claims.ts';
import { followRemoteRun } from './remote-run.ts';

/**
 * An http execution: one exchange with the agent's configured server (the run token and the
 * configured secret headers added by the kernel), or a remote run created there and followed
 * until it ends. The deadline is the row's; the timer only acts on it on time.
 */
export async function runHttpExecution(deps: { db: Database; timeOut(entry: Live): void }, entry: Live, prepared: Extract<Prepared, { kind: 'http' }>, token: string, log: ExecutionLog): Promise<Partial<Finish>> {
  const abort = new AbortController();
  entry.abort = abort;
  if (entry.cancelReason) abort.abort();
  // The kernel's own headers win over the plugin's: the run token, then the configured secrets.
  const headers = { ...prepared.headers, [prepared.tokenHeader]: prepared.tokenHeader === 'authorization' ? `Bearer ${token}` : token, ...prepared.secretHeaders };
  // The deadline is the row's (the heartbeat enforces it, whatever the exchange reads); the timer only acts on it on time.
  const timer = setTimeout(() => deps.timeOut(entry), prepared.timeoutMs);
  await deps.db.exec(`update executions set status = 'running', started_at = now(), deadline_at = now() + make_interval(secs => ?) where id = ? and ${LIVE}`,
    [prepared.timeoutMs / 1000, entry.ref.executionId]);
  for (const note of prepared.notes) log.line('system', `warning: ${note}`);
  if (prepared.remote) {
    try {
      const { 'content-type': _type, 'idempotency-key': _key, ...followHeaders } = headers;
      const outcome = await followRemoteRun({
        create: { url: prepared.url, method: prepared.method, headers, body: prepared.body },
        follow: prepared.remote, headers: followHeaders, addresses: prepared.addresses,
      }, log, abort.signal, (runUrl, stopUrl) => claimRemoteRun(deps.db, entry.ref.executionId, runUrl, { ...prepared.stopRecipe, url: stopUrl.href }));
      if (abort.signal.aborted) return { failed: true, httpStatus: outcome.httpStatus };
      return outcome;
    } finally {
      clearTimeout(timer);
    }
  }
  try {
    const answer = await runHttp({ url: prepared.url, addresses: prepared.addresses, method: prepared.method, headers, body: prepared.body, sse: prepared.sse, signal: abort.signal }, log);
    const ok = answer.status >= 200 && answer.status < 300;
    return { httpStatus: answer.status, response: answer.response, failed: !ok, errorCode: ok ? null : 'http_status' };
  } catch (error) {
    if (abort.signal.aborted) return { failed: true };
    const code = error instanceof KeelError ? error.code : 'http_failed';
    log.line('system', `request failed: ${code}`);
    return { failed: true, errorCode: code };
  } finally {
    clearTimeout(timer);
  }
}
