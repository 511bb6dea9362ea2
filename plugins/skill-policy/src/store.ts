import type { SkillPolicyContext } from './context.ts';
import { compilePolicy, type CompiledPolicy } from './decide.ts';
import { storedDocument } from './document.ts';
import type { Json } from './issues.ts';
import { openDefault, type EffectivePolicy, type PolicyDocument } from './vocabulary.ts';

/**
 * Compiled policies by company, each with the etag of the row it was compiled from. A decision
 * reads only the row's etag when the compiled policy is current, so evaluating 1,000 rules costs
 * no parse; every write changes the etag, so no process keeps deciding by an old document.
 */
const compiled = new Map<string, { etag: string; policy: CompiledPolicy }>();
const MAX_CACHED = 200;
const UNMATERIALIZED = compilePolicy(openDefault());

function remember(companyId: string, etag: string, policy: CompiledPolicy): void {
  compiled.delete(companyId);
  // Oldest first: the first key is the least recently compiled.
  if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
  compiled.set(companyId, { etag, policy });
}

function effective(row: { revision: number; document: Json }): EffectivePolicy {
  const document = storedDocument(row.document);
  return { schemaVersion: 1, revision: row.revision, defaultEffect: document.defaultEffect, rules: document.rules, materialized: true };
}

/** The company's policy as GET answers it: the stored document or the open default. */
export async function readPolicy(ctx: SkillPolicyContext, companyId: string): Promise<EffectivePolicy> {
  const { rows } = await ctx.db.query('select revision, document from skill_policies where company_id = $1', [companyId]);
  return rows[0] ? effective(rows[0] as { revision: number; document: Json }) : openDefault();
}

/** The company's policy compiled for decisions; the document is read only when the cached one is stale. */
export async function compiledPolicy(ctx: SkillPolicyContext, companyId: string): Promise<CompiledPolicy> {
  const cached = compiled.get(companyId);
  const { rows } = await ctx.db.query(
    'select revision, etag, case when etag = $2::uuid then null else document end as document from skill_policies where company_id = $1',
    [companyId, cached?.etag ?? '00000000-0000-0000-0000-000000000000']);
  const row = rows[0] as { revision: number; etag: string; document: Json | null } | undefined;
  if (!row) return UNMATERIALIZED;
  if (row.document === null && cached) return cached.policy;
  const policy = compilePolicy(effective({ revision: row.revision, document: row.document! }));
  remember(companyId, row.etag, policy);
  return policy;
}

export type ReplaceOutcome = { ok: true; previousRevision: number; policy: EffectivePolicy } | { ok: false; currentRevision: number };

/**
 * Replaces the document when the stored revision is `expectedRevision` (0: none stored). The
 * condition is in the write itself (an insert that yields to an existing row, an update of that
 * revision only), so of concurrent replaces with the same expectation exactly one succeeds, in
 * any number of processes: the others wait for its row lock and then find another revision.
 */
export async function replacePolicy(ctx: SkillPolicyContext, companyId: string, document: PolicyDocument, expectedRevision: number): Promise<ReplaceOutcome> {
  const next = expectedRevision + 1;
  const text = JSON.stringify(document);
  const { rows } = expectedRevision === 0
    ? await ctx.db.query(
      `insert into skill_policies (company_id, revision, default_effect, document, etag) values ($1, 1, $2, $3::jsonb, gen_random_uuid())
       on conflict (company_id) do nothing returning revision`,
      [companyId, document.defaultEffect, text])
    : await ctx.db.query(
      `update skill_policies set revision = $2, default_effect = $3, document = $4::jsonb, etag = gen_random_uuid(), updated_at = now()
        where company_id = $1 and revision = $5 returning revision`,
      [companyId, next, document.defaultEffect, text, expectedRevision]);
  if (rows.length === 0) {
    const current = await ctx.db.query('select revision from skill_policies where company_id = $1', [companyId]);
    return { ok: false, currentRevision: (current.rows[0]?.revision as number | undefined) ?? 0 };
  }
  return { ok: true, previousRevision: expectedRevision, policy: { schemaVersion: 1, revision: next, defaultEffect: document.defaultEffect, rules: document.rules, materialized: true } };
}

/** Deletes the stored document; the revision it had, or null when none was stored. */
export async function resetPolicy(ctx: SkillPolicyContext, companyId: string): Promise<number | null> {
  const { rows } = await ctx.db.query('delete from skill_policies where company_id = $1 returning revision', [companyId]);
  return (rows[0]?.revision as number | undefined) ?? null;
}

/** A deleted company's policy goes with it. */
export async function forgetCompany(ctx: SkillPolicyContext, companyId: string): Promise<void> {
  await ctx.db.query('delete from skill_policies where company_id = $1', [companyId]);
  compiled.delete(companyId);
}
