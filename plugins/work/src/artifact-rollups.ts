import type { WorkContext } from './context.ts';

/**
 * Brings the issue's artifact rollup (count and newest change, migration 0010) up to date after
 * a write of one of its documents, attachments or work products, in the write's transaction.
 * The rollup row is locked first and counted in a second statement: that statement's snapshot
 * is taken after the lock is held, so it sees every artifact of any transaction that held the
 * lock before, and of two concurrent writers the later one counts both.
 */
export async function refreshArtifactRollup(ctx: WorkContext, issueId: unknown, companyId: unknown): Promise<void> {
  await ctx.db.query(
    `insert into artifact_rollups (issue_id, company_id, artifact_count, latest_at) values ($1, $2, 0, '-infinity')
     on conflict (issue_id) do update set artifact_count = artifact_rollups.artifact_count`, [issueId, companyId]);
  await ctx.db.query(
    `with counted as (
       select count(*)::int as n, max(updated_at) as latest
         from (select updated_at from issue_documents where issue_id = $1
               union all select updated_at from issue_attachments where issue_id = $1
               union all select updated_at from work_products where issue_id = $1) artifacts),
     kept as (
       update artifact_rollups r set artifact_count = counted.n, latest_at = counted.latest
         from counted where r.issue_id = $1 and counted.n > 0 returning 1)
     delete from artifact_rollups r using counted where r.issue_id = $1 and counted.n = 0`, [issueId]);
}
