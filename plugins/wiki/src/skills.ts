import shipped from '../skills?files';
import type { WikiContext } from './context.ts';

/** The skills the wiki ships (skills/<slug>/SKILL.md), as declared under managed.skills in plugin.json. */
export const WIKI_SKILLS = [
  { slug: 'wiki-maintainer', name: "Wiki maintainer", description: "How the wiki maintainer keeps the company's knowledge wiki." },
  { slug: 'wiki-ingest', name: "Wiki ingest", description: "Turn captured raw sources into wiki pages." },
  { slug: 'wiki-query', name: "Wiki query", description: "Answer a question from the wiki, citing pages." },
  { slug: 'wiki-lint', name: "Wiki lint", description: "Find and fix broken links, orphans, duplicates and stale pages." },
  { slug: 'service-distill', name: "Service distill", description: "Distill the company's recent work (issues, comments, documents) into wiki pages." },
  { slug: 'index-refresh', name: "Index refresh", description: "Rebuild the wiki's index page." },
] as const;

/** A shipped SKILL.md, read at build time; a skill declared without its file fails the call rather than installing nothing. */
function markdownOf(slug: string): string {
  const file = shipped.find((entry) => entry.path === `${slug}/SKILL.md`);
  if (!file?.text) throw new Error(`skills/${slug}/SKILL.md is not shipped with the wiki`);
  return file.text;
}

/**
 * Installs (or brings up to date) the wiki's skills in the call's company through the skills
 * plugin. A skill whose key the company already holds for something else (409 skill_key_taken)
 * is left to the company; the others are still installed.
 */
export async function installWikiSkills(ctx: WikiContext): Promise<void> {
  for (const skill of WIKI_SKILLS) {
    try {
      await ctx.services.call('skills', 'managed-skill', { ...skill, markdown: markdownOf(skill.slug) });
    } catch (error) {
      if ((error as { code?: string }).code !== 'skill_key_taken') throw error;
    }
  }
}
