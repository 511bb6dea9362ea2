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
