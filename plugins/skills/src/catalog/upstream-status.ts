import type { SkillsContext } from '../context.ts';
import { resolveRepository } from '../sources/github-import.ts';

type Row = Record<string, unknown>;
const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/**
 * The update status of a skill imported from a GitHub repository (directly or through the
 * skill directory): the commit its tracking ref names now, against the commit it was pinned to.
 * Asks the GitHub API (the plugin's `githubApiBase`) the same way an import does. Null for
 * skills without a repository to ask (raw URLs, local paths).
 */
export async function upstreamStatus(ctx: SkillsContext, row: Row): Promise<Record<string, unknown> | null> {
  if (row.source_type !== 'github' && row.source_type !== 'skills_sh') return null;
  const metadata = (row.metadata ?? {}) as Row;
  const owner = text(metadata.owner);
  const repo = text(metadata.repo);
  const trackingRef = text(metadata.trackingRef) ?? text(row.source_ref);
  if (!owner || !repo || !trackingRef) return null;
  const latest = await resolveRepository(ctx, {
    form: 'github', owner, repo, refAndPath: trackingRef, blob: false, skill: null, sourceKind: row.source_type === 'skills_sh' ? 'skills_sh' : 'github', original: '',
  });
  const pinnedCommit = text(row.source_commit);
  const updateAvailable = latest.ref === trackingRef && latest.commit !== pinnedCommit;
  return {
    skillId: row.id,
    key: row.key,
    sourceType: row.source_type,
    supported: true,
    trackingRef,
    pinnedCommit,
    latestCommit: latest.ref === trackingRef ? latest.commit : null,
    updateAvailable,
    status: latest.ref !== trackingRef ? 'ref_not_found' : updateAvailable ? 'update_available' : 'up_to_date',
    // Imported copies are read-only: importing the repository again brings the new commit.
    remediation: updateAvailable ? `Import ${row.source_locator ?? `${owner}/${repo}`} again to install commit ${latest.commit}` : null,
  };
}
