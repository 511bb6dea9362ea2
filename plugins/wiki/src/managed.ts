import type { EventPayload } from '@keel/sdk/plugin';
import type { WikiContext } from './context.ts';
import { installWikiSkills } from './skills.ts';

/** This plugin's key (plugin.json), which the host writes into managedBy. */
const PLUGIN_KEY = 'llm-wiki';
/** The maintainer agent's key under managed.agents in plugin.json (made on demand: at the company's first bootstrap, spaces.ts). */
export const MAINTAINER_KEY = 'wiki-maintainer';
/** The wiki's project, as declared under managed.projects in plugin.json. */
export const WIKI_PROJECT = { key: 'llm-wiki', name: 'LLM Wiki', description: "The company's knowledge wiki: the maintainer's ingestion, lint and index work." } as const;

/** The maintainer's routines, as declared under managed.routines in plugin.json: made paused, the board resumes them. */
export const WIKI_ROUTINES = [
  { key: 'cursor-window-processing', title: "Process the cursor window: ingest new company activity into the wiki", intervalSec: 900 },
  { key: 'nightly-wiki-lint', title: "Lint the wiki (links, orphans, duplicates, stale pages)", intervalSec: 86400 },
  { key: 'index-refresh', title: "Refresh the wiki index", intervalSec: 3600 },
] as const;

/**
 * agent.created: when the host has made this plugin's maintainer in a company (at the company's
 * first bootstrap of its wiki), the company gets the wiki's project (the work plugin's managed-project service)
 * its skills (the skills plugin's managed-skill service) and its routines, paused (the runtime
 * plugin's managed-routine service), each once per company and key, so
 * a redelivered event makes nothing twice. Other agents'
 * events are ignored.
 */
export async function onAgentCreated(payload: EventPayload<'agent.created'>, ctx: WikiContext): Promise<void> {
  const { managedBy } = payload.agent;
  if (managedBy?.plugin !== PLUGIN_KEY || managedBy.key !== MAINTAINER_KEY) return;
  await ctx.services.call('work', 'managed-project', { ...WIKI_PROJECT });
  await installWikiSkills(ctx);
  const { agentId } = payload;
  for (const routine of WIKI_ROUTINES) await ctx.services.call('runtime', 'managed-routine', { ...routine, agentId });
}
