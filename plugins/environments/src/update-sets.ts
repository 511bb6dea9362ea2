/** How a body field is stored: its column, and whether it is a JSON column. */
export type ColumnMap = Record<string, { column: string; json?: boolean }>;

/**
 * The `set` list of an update from the fields a patch body names (and only those), with their
 * values appended to `params` after what is already there. An absent field is left alone; a
 * null is written as null.
 */
export function updateSets(body: Record<string, unknown>, columns: ColumnMap, params: unknown[]): string[] {
  const sets: string[] = [];
  for (const [field, { column, json }] of Object.entries(columns)) {
    if (!Object.hasOwn(body, field)) continue;
    const value = body[field];
    params.push(json && value !== null && value !== undefined ? JSON.stringify(value) : (value ?? null));
    sets.push(`${column} = $${params.length}${json ? '::jsonb' : ''}`);
  }
  return sets;
}
