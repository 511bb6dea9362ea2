import { createHash } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { badRequest, conflict } from '../http/errors.ts';

/** A claim older than this belongs to a request whose process died: a retry may take it over. */
const STALE_AFTER_SECONDS = 300;
const KEY = /^[A-Za-z0-9._:\-]{1,200}$/;

export interface ImportProgress {
  companyId?: string;
  ids?: Record<string, Record<string, string | null>>;
  kernel?: unknown;
  parts?: Record<string, unknown>;
}

export type ImportClaim =
  | { kind: 'replay'; result: unknown }
  | { kind: 'run'; progress: ImportProgress; save: (db: Queryable, progress: ImportProgress) => Promise<void>; finish: (result: unknown) => Promise<void>; fail: () => Promise<void> };

/**
 * At most one run of an import per idempotency key and scope (the target company, or the
 * board user for a new company). See migration 0025 for how a failed import resumes.
 */
export async function claimImport(db: Database, scopeKey: string, idempotencyKey: string, request: unknown): Promise<ImportClaim> {
  if (!KEY.test(idempotencyKey)) throw badRequest('Idempotency-Key must be 1-200 characters of letters, digits and ._:-');
  const hash = createHash('sha256').update(JSON.stringify(request)).digest('hex');
  const where = 'scope_key = ? and idempotency_key = ?';
  const key = [scopeKey, idempotencyKey];
  const claimed = await db.maybeOne(
    `insert into company_imports (scope_key, idempotency_key, request_hash, status) values (?, ?, ?, 'running') on conflict do nothing returning progress`,
    [...key, hash]);
  let progress: ImportProgress = {};
  if (!claimed) {
    const row = await db.maybeOne<{ request_hash: string; status: string; result: unknown; progress: ImportProgress; stale: boolean }>(
      `select request_hash, status, result, progress, claimed_at < now() - make_interval(secs => ?) as stale from company_imports where ${where}`,
      [STALE_AFTER_SECONDS, ...key]);
    if (!row) return claimImport(db, scopeKey, idempotencyKey, request);
    if (row.request_hash !== hash) throw conflict(`Idempotency key ${idempotencyKey} was used for another import request`, undefined, 'idempotency_key_reused');
    if (row.status === 'done') return { kind: 'replay', result: row.result };
    const taken = (row.status === 'failed' || row.stale) && await db.exec(
      `update company_imports set status = 'running', claimed_at = now() where ${where} and status = ?`, [...key, row.status]);
    if (!taken) throw conflict(`An import with idempotency key ${idempotencyKey} is still running; retry later`, undefined, 'import_in_progress');
    progress = row.progress ?? {};
  }
  return {
    kind: 'run',
    progress,
    save: async (tx, next) => {
      await tx.exec(`update company_imports set progress = ?::jsonb, company_id = ? where ${where}`, [JSON.stringify(next), next.companyId ?? null, ...key]);
    },
    finish: async (result) => {
      await db.exec(`update company_imports set status = 'done', result = ?::jsonb, completed_at = now() where ${where}`, [JSON.stringify(result), ...key]);
      // Finished imports are remembered for a day: now and then, one completion clears what is older.
      if (Math.random() < 0.05) await db.exec("delete from company_imports where status = 'done' and completed_at < now() - interval '1 day'");
    },
    fail: async () => {
      await db.exec(`update company_imports set status = 'failed' where ${where}`, key);
    },
  };
}
