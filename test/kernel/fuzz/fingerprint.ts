import type { TestKernel } from '../../support/harness.ts';

/**
 * Row counts and contents of every table of the kernel (schema public) and of the plugins
 * (plugin_*): what the fuzz test compares before and after a route's requests. Left out:
 * `last_used_at`, which a valid key updates on every request, and the run records of
 * scheduled jobs, which the clock starts whatever the requests do.
 */
export async function fingerprinter(t: TestKernel): Promise<() => Promise<Record<string, string>>> {
  const { rows } = await t.sql.query<{ schema: string; name: string }>(
    `select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and (table_schema = 'public' or table_schema like 'plugin\\_%') order by 1, 2`);
  const parts = rows.map(({ schema, name }) => {
    const table = `"${schema}"."${name}"`;
    // The clock's own work (a plugin's every-minute sweep) lands whenever the minute turns.
    const where = `${schema}.${name}` === 'public.plugin_job_runs' ? ` where x.trigger <> 'schedule'` : '';
    return `(select count(*) || ':' || md5(coalesce(string_agg((to_jsonb(x) - 'last_used_at')::text, '|' order by (to_jsonb(x) - 'last_used_at')::text), '')) from ${table} x${where}) as "${schema}.${name}"`;
  });
  const sql = `select ${parts.join(', ')}`;
  return async () => (await t.sql.query(sql)).rows[0];
}

export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys(after).filter((table) => after[table] !== before[table]);
}
