import type { PluginDatabase } from './database.ts';
import type { Invocation } from '../invocation.ts';
import { CapabilityError } from './types.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../../db/connection-errors.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_CENTS = Number.MAX_SAFE_INTEGER;

/**
 * Writes to kernel rows (budgets, pauses, issue numbers) from inside the invocation's own
 * transaction, through SECURITY DEFINER functions of `keel_bridge` that accept only the
 * invocation identity the kernel signed and act only on its company. Because they share the
 * plugin's transaction, a hard stop commits or rolls back together with the spend that caused
 * it. The database itself enforces the grant: the functions are executable by the plugin's
 * role only when the operator granted the capability (see plugin-databases.ts).
 */
export async function bridge(db: PluginDatabase | null, invocation: Invocation, sql: string, values: unknown[], own: 'call' | 'autonomous' = 'call'): Promise<unknown> {
  if (!db) throw new CapabilityError(403, 'kernel_rows_unavailable', 'this capability needs the plugin database connection');
  if (invocation.message.readOnly || !invocation.message.transactional) throw new CapabilityError(403, 'kernel_rows_read_only', 'kernel rows can be changed only from a mutating, transactional call');
  const signed = invocation.message.signed;
  if (!signed || !invocation.message.info.companyId) throw new CapabilityError(403, 'kernel_rows_unavailable', 'this call serves no company; kernel rows cannot be changed');
  const query = { text: sql, values: [signed.invocation, signed.signature, ...values] };
  // Marked before the statement runs: one that fails may still have changed rows of a
  // transaction that goes on (the call catches the error), and a needless wait costs less.
  invocation.kernelRowsWritten = true;
  try {
    let result;
    if (own === 'autonomous') {
      result = await db.autonomous(query.text, query.values);
    } else {
      const client = await db.transactionOf(invocation)!;
      result = await db.statement(client, () => client.query(query));
    }
    return (result.rows[0] as { result?: unknown } | undefined)?.result ?? null;
  } catch (error) {
    if (error instanceof CapabilityError) throw error;
    if (isDatabaseUnavailable(error)) throw new CapabilityError(DATABASE_UNAVAILABLE.status, DATABASE_UNAVAILABLE.code, DATABASE_UNAVAILABLE.message);
    const pgError = error as { code?: string; message?: string };
    if (pgError.code === '42501') throw new CapabilityError(403, 'capability_denied', `the database refused: ${pgError.message}`);
    throw new CapabilityError(400, 'invalid_arguments', pgError.message ?? 'refused');
  }
}

export function cents(value: unknown, name: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_CENTS) throw new CapabilityError(400, 'invalid_arguments', `${name} must be a non-negative integer number of cents`);
  return value as number;
}

export function uuid(value: unknown, name: string): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new CapabilityError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}

export function reason(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw new CapabilityError(400, 'invalid_arguments', 'reason must be 1-200 characters');
  return value;
}

/** The answer of a hold function: an unknown id (or another company's) is not found; nothing was raised, so the call's transaction goes on. */
export function holdAnswer(result: unknown, what: string): { changed: boolean } {
  const { found, changed } = result as { found: boolean; changed: boolean };
  if (!found) throw new CapabilityError(404, 'not_found', `${what} not found`);
  return { changed };
}
