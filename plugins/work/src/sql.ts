import { PluginError, type DatabaseCapability } from '@keel/sdk/plugin';

/**
 * `set` clauses for a PATCH: only the fields the body names, each bound as a parameter
 * (columns come from the map, never from the request). `params` continues the caller's list.
 */
export function assignments(body: Record<string, unknown>, columns: Record<string, string>, params: unknown[]): string[] {
  const sets: string[] = [];
  for (const [field, column] of Object.entries(columns)) {
    if (!Object.hasOwn(body, field)) continue;
    params.push(body[field] ?? null);
    sets.push(`${column} = $${params.length}`);
  }
  return sets;
}

/**
 * A list parameter as SQL: arrays cross the sandbox boundary as JSON, so a list is bound as
 * jsonb and unpacked here (`list(2, 'uuid')` is the uuids of parameter $2).
 */
export function list(param: number, type: 'uuid' | 'text'): string {
  return `array(select jsonb_array_elements_text($${param}::jsonb)::${type})`;
}

type Row = Record<string, unknown>;
/** The tables whose rows routes lock and patch, and the 404 text of each. */
const MISSING = { goals: 'Goal not found', projects: 'Project not found', issues: 'Issue not found' } as const;
type PatchedTable = keyof typeof MISSING;

/**
 * Locks a row of the call's company for the change to come; 404 when the company has none with
 * this id. FOR NO KEY UPDATE, the lock an update that keeps the key takes: changes of the row
 * wait for each other, but rows that only reference it (a comment's foreign key takes KEY
 * SHARE) are written meanwhile, and do not hold up the change either.
 */
export async function lockRow(db: DatabaseCapability, table: PatchedTable, id: string, companyId: string): Promise<Row> {
  const { rows } = await db.query(`select * from ${table} where id = $1 and company_id = $2 for no key update`, [id, companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', MISSING[table]);
  return rows[0];
}

/** Writes the `set` clauses (see assignments) to a locked row and answers it; the row as it was when there is nothing to set. */
export async function updateRow(db: DatabaseCapability, table: PatchedTable | 'work_products', current: Row, sets: string[], params: unknown[]): Promise<Row> {
  if (!sets.length) return current;
  const { rows } = await db.query(`update ${table} set ${sets.join(', ')}, updated_at = now() where id = $1 returning *`, params);
  return rows[0]!;
}

/** Fields whose value a patch really changes, with the values before and after (for activity). */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>, fields: readonly string[]) {
  const changes: Record<string, unknown> = {};
  const previous: Record<string, unknown> = {};
  for (const field of fields) {
    if (JSON.stringify(before[field]) === JSON.stringify(after[field])) continue;
    changes[field] = after[field];
    previous[field] = before[field];
  }
  return { changes, previous };
}

/** The row counts a page may read (see readLimit). */
const READ_LIMITS = [11, 31, 51, 101, 201, 501, 1001];

/**
 * How many rows a statement reads for a page that needs `rows` (its size, and one more to
 * know whether another page follows): the next of a few fixed counts, written into the SQL as
 * a literal. A bound LIMIT made PostgreSQL plan the statement anew on every call (its generic
 * plan assumes a tenth of the table), and planning cost more than running the page; a few
 * fixed texts are prepared and planned once per connection. The default page sizes (30 and 50)
 * read exactly their rows; the caller keeps the first it needs.
 */
export function readLimit(rows: number): number {
  return READ_LIMITS.find((count) => count >= rows) ?? Math.ceil(rows);
}
