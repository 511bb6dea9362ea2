import { PluginError, type DatabaseCapability } from '@keel/sdk/plugin';
import { requiredBundledKeys } from '../catalog/catalog-content.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ResolvedSelection { keys: string[]; unknown: string[]; ambiguous: string[] }

/**
 * Desired-skill references to canonical keys, in the order given, without repeats: a skill's
 * uuid, its canonical key, or its slug when exactly one skill of the company has it (two or more
 * make the slug ambiguous). References are compared without case, as keys and slugs are stored
 * lower-cased.
 */
export async function resolveReferences(db: DatabaseCapability, companyId: string, references: string[]): Promise<ResolvedSelection> {
  const wanted = [...new Set(references.map((reference) => reference.trim()).filter((reference) => reference !== ''))];
  const lowered = wanted.map((reference) => reference.toLowerCase());
  const { rows } = await db.query(
    `select id::text as id, key, slug from company_skills
      where company_id = $1
        and (id::text in (select jsonb_array_elements_text($2::jsonb)) or key in (select jsonb_array_elements_text($2::jsonb))
             or slug in (select jsonb_array_elements_text($2::jsonb)))`,
    [companyId, JSON.stringify(lowered)]);
  const keys: string[] = [];
  const unknown: string[] = [];
  const ambiguous: string[] = [];
  wanted.forEach((reference, index) => {
    const value = lowered[index]!;
    const byId = UUID.test(value) ? rows.find((row) => row.id === value) : undefined;
    const byKey = byId ?? rows.find((row) => row.key === value);
    const bySlug = byKey ? [byKey] : rows.filter((row) => row.slug === value);
    if (bySlug.length === 1) keys.push(String(bySlug[0]!.key));
    else if (bySlug.length > 1) ambiguous.push(reference);
    else unknown.push(reference);
  });
  return { keys: [...new Set(keys)], unknown, ambiguous };
}

/** Unknown or ambiguous references refuse the whole selection (422), naming each. */
export function assertValidSelection(selection: ResolvedSelection): void {
  if (selection.unknown.length === 0 && selection.ambiguous.length === 0) return;
  const named = [...selection.unknown, ...selection.ambiguous.map((reference) => `${reference} (ambiguous)`)];
  throw new PluginError(422, 'invalid_skill_selection', `Invalid company skill selection (${named.join(', ')})`, {
    unknown: selection.unknown, ambiguous: selection.ambiguous,
  });
}

/** The keys of the company's required skills (bundled, always desired), by key. */
export async function requiredSkillKeys(db: DatabaseCapability, companyId: string): Promise<string[]> {
  const { rows } = await db.query('select key from company_skills where company_id = $1 and required order by key', [companyId]);
  // The catalog's required bundled skills count before the company has ever listed (and so installed) them.
  return [...new Set([...requiredBundledKeys(), ...rows.map((row) => String(row.key))])].sort();
}

/** References resolved and refused as above, with the required keys added after the chosen ones. */
export async function resolveSelection(db: DatabaseCapability, companyId: string, references: string[]): Promise<string[]> {
  const selection = await resolveReferences(db, companyId, references);
  assertValidSelection(selection);
  const required = await requiredSkillKeys(db, companyId);
  return [...new Set([...selection.keys, ...required])];
}
