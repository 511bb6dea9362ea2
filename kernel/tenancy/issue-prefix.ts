import type { Queryable, Row } from '../db/database.ts';

/**
 * Issue prefixes name a company's issues (`ACM-12`), so they are short, uppercase letters
 * only and unique across the instance. They are fixed when the company is created: a rename
 * keeps the prefix, because issue identifiers already handed out must keep resolving.
 */
const FALLBACK_PREFIX = 'CMP';
const MAX_WORDS = 4;
const MAX_ATTEMPTS = 1000;

/**
 * The preferred prefix for a name: the initials of the first four words when the name has
 * several ("Big Red Dog" -> BRD), else the first three letters of the one word
 * ("Acme" -> ACM). Accents are folded away; digits and punctuation never appear.
 */
export function deriveIssuePrefixBase(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .map((word) => word.replace(/[^A-Z]/g, ''))
    .filter((word) => word.length > 0);
  if (words.length === 0) return FALLBACK_PREFIX;
  const base = words.length === 1 ? words[0]!.slice(0, 3) : words.slice(0, MAX_WORDS).map((word) => word[0]).join('');
  return base.length >= 2 ? base : `${base}X`;
}

/** Attempt 0 is the base itself; later attempts append A..Z, then AA, AB, ... */
export function prefixCandidate(base: string, attempt: number): string {
  let suffix = '';
  let n = attempt;
  while (n > 0) {
    n -= 1;
    suffix = String.fromCharCode(65 + (n % 26)) + suffix;
    n = Math.floor(n / 26);
  }
  return base + suffix;
}

/**
 * Inserts a company row with the first free prefix derived from its name. Taken prefixes
 * are read first so that the common case needs one insert; a concurrent creator that takes
 * the same candidate in between is caught by the unique index (`on conflict do nothing`
 * returns no row, without aborting the transaction) and the next candidate is tried.
 */
export async function insertWithUniquePrefix(
  db: Queryable,
  name: string,
  insert: (prefix: string) => Promise<Row | undefined>,
): Promise<Row> {
  const base = deriveIssuePrefixBase(name);
  const taken = new Set((await db.query<{ issue_prefix: string }>(
    'select issue_prefix from companies where issue_prefix like ?', [`${base}%`])).map((row) => row.issue_prefix));
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    const candidate = prefixCandidate(base, attempt);
    if (taken.has(candidate)) continue;
    const row = await insert(candidate);
    if (row) return row;
    taken.add(candidate);
  }
  throw new Error(`Could not allocate an issue prefix for base ${base}`);
}
