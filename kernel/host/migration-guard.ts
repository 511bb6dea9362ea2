/**
 * What a plugin's migrations may not do unless its manifest declares `database.functions`:
 * create functions or procedures, run DO blocks (which could create them through dynamic
 * SQL) or comment on objects. Function sources (pg_proc.prosrc) and comments (pg_description)
 * are readable by every role of the database, so what a plugin writes there is public to
 * every other plugin; a plugin that needs them says so, and the operator sees it.
 *
 * The migration text is split into statements the way PostgreSQL's lexer sees them (quoted
 * strings, E'' strings, quoted identifiers, dollar quoting, line and nested block comments),
 * and each statement is judged by its leading words. On a hardened database the migrator of
 * an undeclaring plugin also lacks USAGE on the sql and plpgsql languages (see
 * database-hardening.ts), so a statement this check missed would still fail there.
 */
const REFUSED: ReadonlyArray<{ words: RegExp; what: string }> = [
  { words: /^create (or replace )?(function|procedure)\b/, what: 'creates a function or procedure' },
  { words: /^comment on\b/, what: 'comments on an object' },
  { words: /^do\b/, what: 'runs a DO block' },
];

/** Statements of an SQL script, each with its comments removed and blanks collapsed (for judging, not running). */
export function statementHeads(sql: string): string[] {
  const heads: string[] = [];
  let current = '';
  let i = 0;
  const n = sql.length;
  const flush = () => {
    const head = current.replace(/\s+/g, ' ').trim().toLowerCase();
    if (head) heads.push(head);
    current = '';
  };
  while (i < n) {
    const c = sql[i]!;
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
      current += ' ';
    } else if (c === '/' && sql[i + 1] === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql.startsWith('/*', i)) { depth++; i += 2; } else if (sql.startsWith('*/', i)) { depth--; i += 2; } else i++;
      }
      current += ' ';
    } else if (c === "'") {
      // E'...' allows backslash escapes; '' is a quote in either kind.
      const escapes = /e$/i.test(current) && !/[\w$]e$/i.test(current);
      i++;
      while (i < n) {
        if (escapes && sql[i] === '\\') { i += 2; continue; }
        if (sql[i] === "'") { if (sql[i + 1] === "'") { i += 2; continue; } break; }
        i++;
      }
      i++;
      current += "''";
    } else if (c === '"') {
      const end = sql.indexOf('"', i + 1);
      current += sql.slice(i, end < 0 ? n : end + 1);
      i = end < 0 ? n : end + 1;
    } else if (c === '$' && !/[\w$]$/.test(current)) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 70));
      if (!tag) { current += c; i++; continue; }
      const end = sql.indexOf(tag[0], i + tag[0].length);
      i = end < 0 ? n : end + tag[0].length;
      current += '$$';
    } else if (c === ';') {
      flush();
      i++;
    } else {
      current += c;
      i++;
    }
  }
  flush();
  return heads;
}

/** Why the migration is refused (what it does, and the statement), or null when it may run. */
export function refusedMigration(sql: string): string | null {
  for (const [index, head] of statementHeads(sql).entries()) {
    const refused = REFUSED.find((rule) => rule.words.test(head));
    if (refused) return `${refused.what} (statement ${index + 1}: ${head.length > 80 ? `${head.slice(0, 80)}…` : head})`;
  }
  return null;
}
