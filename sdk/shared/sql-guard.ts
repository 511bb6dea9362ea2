/**
 * Plugin SQL runs one statement per call over the extended protocol (so a string holding
 * several statements is refused by PostgreSQL itself) under the plugin's own role. What the
 * role cannot be denied by privileges is ending the host's transaction: a top-level COMMIT
 * would let later statements escape the invocation's transaction. Transaction control is
 * refused here by its leading keyword, after comments, which SQL's grammar puts first.
 */
const TRANSACTION_CONTROL = new Set(['begin', 'start', 'commit', 'end', 'rollback', 'abort', 'savepoint', 'release', 'prepare']);
// `declare`: a cursor WITH HOLD outlives the transaction on a pooled connection.
// `execute` / `deallocate`: the host's own prepared statements are not the plugin's to run or drop.
const SESSION_STATE = new Set(['listen', 'unlisten', 'notify', 'discard', 'load', 'checkpoint', 'vacuum', 'copy', 'do', 'call', 'lock', 'reset', 'set', 'declare', 'fetch', 'move', 'close', 'execute', 'deallocate']);
/**
 * The runtime role owns nothing, so DDL fails on privileges anyway, with one exception the
 * database allows every role: ALTER ROLE CURRENT_USER SET/PASSWORD on itself. Schema and role
 * changes belong in migrations.
 */
const SCHEMA_CHANGES = new Set(['alter', 'create', 'drop', 'grant', 'revoke', 'comment', 'security', 'reassign', 'import', 'cluster', 'reindex', 'refresh']);

export function leadingKeyword(sql: string): string {
  let i = 0;
  const n = sql.length;
  for (;;) {
    while (i < n && /[\s(;]/.test(sql[i]!)) i++;
    if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
      continue;
    }
    if (sql.startsWith('/*', i)) {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql.startsWith('/*', i)) { depth++; i += 2; } else if (sql.startsWith('*/', i)) { depth--; i += 2; } else i++;
      }
      continue;
    }
    break;
  }
  const match = /^[A-Za-z_]+/.exec(sql.slice(i));
  return match ? match[0].toLowerCase() : '';
}

export function refusedStatement(sql: string): string | null {
  const keyword = leadingKeyword(sql);
  if (keyword === '') return 'an empty statement';
  if (TRANSACTION_CONTROL.has(keyword)) return `transaction control (${keyword.toUpperCase()}): the host owns the transaction`;
  if (SESSION_STATE.has(keyword)) return `${keyword.toUpperCase()} changes session state or the server; it is not available to plugins`;
  if (SCHEMA_CHANGES.has(keyword)) return `${keyword.toUpperCase()}: schema and role changes belong in the plugin's migrations`;
  return null;
}
