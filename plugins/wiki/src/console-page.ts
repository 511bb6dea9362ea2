import type { RouteRequest } from '@keel/sdk/plugin';
import type { WikiContext } from './context.ts';
import { overviewRoute } from './spaces.ts';

/**
 * The wiki's console page (plugin.json `ui.pages`, key `wiki`): the console renders the answer of
 * the data handler named by the page's key in its sandboxed frame, so this handler is what makes
 * the page exist. It shows the company's wiki as the overview route reads it: whether a folder is
 * mounted (and, when not, where an instance admin chooses it), the spaces with their page counts
 * and the latest operations. Everything the wiki holds is written into the page as text.
 */
export async function wikiConsolePage(_input: unknown, ctx: WikiContext): Promise<{ html: string }> {
  const overview = await overviewRoute({ params: {}, query: {}, body: null } as unknown as RouteRequest, ctx);
  const folder = overview.folder;
  const state = !folder.configured
    ? `No folder is mounted as <code>wiki-root</code> for this company (${escape(folder.problem ?? 'not configured')}). An instance admin chooses it on the plugin's page: Plugins, Knowledge wiki, Local folders.`
    : folder.bootstrapped ? 'The wiki folder is mounted and laid out.'
      : 'The wiki folder is mounted but not laid out yet: the board lays it out with POST /api/plugins/llm-wiki/bootstrap.';
  const spaces = overview.spaces.map((space) =>
    `<tr><td>${escape(space.name)}</td><td><code>${escape(space.slug)}</code></td><td>${escape(space.status)}</td><td>${space.pages}</td></tr>`).join('');
  const operations = (overview.recentOperations as Array<{ kind: string; summary: string | null; createdAt: string }>).map((operation) =>
    `<li>${escape(operation.kind)}${operation.summary ? `: ${escape(operation.summary)}` : ''} <small>${escape(String(operation.createdAt))}</small></li>`).join('');
  return {
    html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Wiki</title><style>${STYLE}</style></head><body>
<p id="folder-state" data-configured="${folder.configured}">${state}</p>
<h2>Spaces</h2>
<table><thead><tr><th scope="col">Space</th><th scope="col">Slug</th><th scope="col">Status</th><th scope="col">Pages</th></tr></thead><tbody>${spaces}</tbody></table>
<p>Ingestion of issues: ${overview.ingestion.enabled ? 'on' : 'off'}.</p>
<h2>Recent operations</h2>
${operations ? `<ul>${operations}</ul>` : '<p>None yet.</p>'}
<script>window.parent.postMessage({ keel: 'resize', height: document.documentElement.scrollHeight + 24 }, '*');</script>
</body></html>`,
  };
}

const STYLE = 'body{font:14px/1.5 system-ui,sans-serif;margin:8px;color:#1a1a1a}table{border-collapse:collapse}th,td{text-align:left;padding:4px 12px 4px 0}code{font-size:13px}';

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
