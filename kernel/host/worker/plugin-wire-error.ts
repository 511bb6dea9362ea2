import type { WireError } from '../protocol/messages.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../db/connection-errors.ts';
import { CapabilityError } from './capabilities/types.ts';
import type { DeliveredSecrets } from './delivered-secrets.ts';

/** Codes of the database errors ctx.db.query rejects with (kernel/host/worker/capabilities/database.ts). */
const DATABASE_ERROR = /^sql_(?:[0-9A-Z]{5}|error)$/;

/**
 * A plugin's own error, as it leaves the worker: bounded, and with the types the kernel expects.
 * A database error the plugin let through keeps its code and status, but PostgreSQL's text
 * (which names tables, constraints and the values sent) goes to the plugin's log (`logWarning`)
 * instead of the caller. Secret values delivered to the isolate are kept out of all of it.
 */
export function wireFromPlugin(raw: unknown, target: string, delivered: DeliveredSecrets, logWarning: (message: string) => void): WireError {
  const e = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const status = Number.isInteger(e.status) && (e.status as number) >= 400 && (e.status as number) <= 599 ? e.status as number : 500;
  const code = typeof e.code === 'string' && /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/.test(e.code) && delivered.text(e.code) === e.code ? e.code : 'plugin_error';
  let message = typeof e.message === 'string' && e.message.length > 0 ? delivered.text(e.message.length > 2000 ? `${e.message.slice(0, 2000)}…` : e.message) : 'Plugin failed';
  if (DATABASE_ERROR.test(code)) {
    logWarning(`${target} failed with ${code}: ${message}`);
    message = code === 'sql_error' ? "The plugin's database query failed" : `The plugin's database query failed (SQLSTATE ${code.slice(4)})`;
  }
  const wired: WireError = { status, code, message };
  if (e.details !== undefined && e.details !== null) {
    const text = JSON.stringify(e.details);
    if (text.length <= 16_000) wired.details = delivered.value(e.details);
  }
  // Only a list of {path, message} objects is an issues list; anything else is dropped.
  if (Array.isArray(e.issues) && e.issues.every(isIssue)) {
    if (JSON.stringify(e.issues).length <= 16_000) wired.issues = delivered.value(e.issues) as WireError['issues'];
  }
  return wired;
}

/** `{path, message}`: path a dotted string or a list of keys and indexes. */
function isIssue(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const { path, message } = value as Record<string, unknown>;
  const pathOk = typeof path === 'string' || (Array.isArray(path) && path.every((part) => typeof part === 'string' || typeof part === 'number'));
  return pathOk && typeof message === 'string';
}

/** A host function's failure as the isolate sees it: a capability's own error, or a fixed message that names nothing of the host. */
export function wireHostError(error: unknown): WireError {
  if (error instanceof CapabilityError) return { status: error.status, code: error.code, message: error.message };
  const candidate = error as { status?: number; code?: string; message?: string };
  if (candidate && typeof candidate.status === 'number' && typeof candidate.code === 'string') {
    return { status: candidate.status, code: candidate.code, message: String(candidate.message ?? 'failed') };
  }
  // A capability that met an unreachable database (activity, events, issue numbers on the plugin's connection): retryable.
  if (isDatabaseUnavailable(error)) return { ...DATABASE_UNAVAILABLE };
  return { status: 500, code: 'host_error', message: 'The host could not complete the call' };
}


/**
 * A transaction that could not be opened, written or committed, as the caller sees it: a fixed
 * message. PostgreSQL's own text names the plugin's tables, constraints and values, so it goes
 * to the plugin's log only (`log`).
 */
export const TRANSACTION_FAILURES = {
  open: "The plugin's transaction could not be opened",
  activity: 'The activity entry could not be written',
  commit: "The plugin's transaction could not commit",
} as const;

export function transactionFailure(stage: keyof typeof TRANSACTION_FAILURES, target: string, error: unknown, log: (message: string) => void): WireError {
  log(`${target}: ${TRANSACTION_FAILURES[stage]}: ${String((error as Error)?.message ?? error).slice(0, 500)}`);
  // A connection lost at COMMIT leaves the outcome unknown: the client retries (with its idempotency key), as for any outage.
  if (isDatabaseUnavailable(error)) return { ...DATABASE_UNAVAILABLE };
  return { status: 500, code: 'plugin_transaction_failed', message: TRANSACTION_FAILURES[stage] };
}
