import type { Queryable } from '../db/database.ts';
import { conflict } from '../http/errors.ts';

/**
 * Agent shortnames (the `urlKey`): a company-unique, URL-safe key derived from the name.
 * Uniqueness holds among the company's agents that are not terminated (the partial unique
 * index agents_company_url_key enforces it), so a terminated agent's shortname can be reused.
 */
const FALLBACK = 'agent';
const MAX_SUFFIX = 1000;

/** Lowercase ASCII letters and digits joined by single dashes; accents are folded first. */
export function normalizeShortname(value: string): string | null {
  const folded = value.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  const key = folded.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  return key.length > 0 ? key.slice(0, 100).replace(/-+$/, '') : null;
}

/** A name made only of symbols or non-Latin script still needs a key. */
export function deriveShortname(name: string): string {
  return normalizeShortname(name) ?? FALLBACK;
}

/**
 * Serialises shortname decisions per company for the rest of the transaction, so that two
 * concurrent creates of "Coder" end as "Coder" and "Coder 2" instead of a unique violation.
 */
export async function lockCompanyShortnames(tx: Queryable, companyId: string): Promise<void> {
  await tx.query("select pg_advisory_xact_lock(hashtext('keel.agent_shortnames'), hashtext(?))", [companyId]);
}

async function takenKeys(db: Queryable, companyId: string, excludeAgentId?: string): Promise<Set<string>> {
  const rows = await db.query<{ url_key: string }>(
    `select url_key from agents where company_id = ? and status <> 'terminated' and (?::uuid is null or id <> ?::uuid)`,
    [companyId, excludeAgentId ?? null, excludeAgentId ?? null],
  );
  return new Set(rows.map((row) => row.url_key));
}

/**
 * On create, a name whose shortname is taken gets a numeric suffix ("Coder" -> "Coder 2"),
 * so the stored name and its shortname stay in step. Call after lockCompanyShortnames.
 */
export async function uniqueNameForCreate(db: Queryable, companyId: string, name: string): Promise<{ name: string; urlKey: string }> {
  const taken = await takenKeys(db, companyId);
  const base = deriveShortname(name);
  if (!taken.has(base)) return { name, urlKey: base };
  for (let n = 2; n <= MAX_SUFFIX; n++) {
    const candidate = `${name} ${n}`;
    const key = deriveShortname(candidate);
    if (!taken.has(key)) return { name: candidate, urlKey: key };
  }
  throw conflict(`Agent shortname '${base}' is already in use in this company`, undefined, 'agent_shortname_conflict');
}

/** On rename, a collision is the caller's to resolve: 409, as the spec says. */
export async function assertShortnameAvailable(db: Queryable, companyId: string, urlKey: string, agentId: string): Promise<void> {
  const taken = await takenKeys(db, companyId, agentId);
  if (taken.has(urlKey)) {
    throw conflict(`Agent shortname '${urlKey}' is already in use in this company`, { urlKey }, 'agent_shortname_conflict');
  }
}
