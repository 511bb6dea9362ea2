import { PluginError, type InstanceCatalog, type RouteRequest } from '@keel/sdk/plugin';
import type { WebsiteContext } from './context.ts';
import { document, oneLine, schemaBlock } from './markdown.ts';

/**
 * A connector is one way an agent's tools reach Keel over MCP: the built-in endpoint itself
 * (`keel`: the core work tools), and each enabled plugin that contributes tools (slug: its key;
 * the scope is that plugin's tools). `keel` is a reserved plugin key, so slugs never collide.
 */
export interface Connector {
  slug: string;
  name: string;
  overview: string;
  tools: Array<{ name: string; description: string; inputSchema?: Record<string, unknown> }>;
}

export const BUILT_IN_SLUG = 'keel';

export function connectorsOf(catalog: InstanceCatalog): Connector[] {
  const builtIn: Connector = {
    slug: BUILT_IN_SLUG,
    name: 'Keel MCP',
    overview: `The instance's own MCP endpoint (${catalog.mcp.endpoint}): the core work tools an agent needs in a run (who it is, its inbox, issues, comments and documents), answering exactly as the HTTP routes do.`,
    tools: catalog.mcp.coreTools,
  };
  const plugins = catalog.plugins.filter((plugin) => plugin.tools.length > 0).map((plugin) => ({
    slug: plugin.key,
    name: plugin.displayName,
    overview: plugin.description ?? `Tools of the ${plugin.displayName} plugin.`,
    tools: plugin.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
  }));
  return [builtIn, ...plugins];
}

export async function catalogPage(_req: RouteRequest, ctx: WebsiteContext): Promise<string> {
  const catalog = await ctx.catalog.get();
  const lines = [
    '# Connectors',
    '',
    `Connectors bring Keel's tools to an agent over MCP (Streamable HTTP at \`${catalog.mcp.endpoint}\`). One connector is the built-in endpoint with the core work tools; each enabled plugin that contributes tools is another, scoped to its tools. Every connector is reached through the same endpoint with the same credentials.`,
    '',
  ];
  for (const connector of connectorsOf(catalog)) {
    lines.push(`## [${oneLine(connector.name, 120)}](/product/connectors/${connector.slug}.md)`, '', oneLine(connector.overview, 600), '',
      `- Slug: \`${connector.slug}\``, `- Tools: ${connector.tools.length}`, '');
  }
  return document(lines);
}

export async function connectorPage(req: RouteRequest, ctx: WebsiteContext): Promise<string> {
  const page = req.params.page ?? '';
  const slug = page.endsWith('.md') ? page.slice(0, -3) : '';
  const catalog = await ctx.catalog.get();
  const connector = connectorsOf(catalog).find((candidate) => candidate.slug === slug);
  if (!connector) throw new PluginError(404, 'connector_not_found', `No connector "${page.slice(0, 100)}": see /product/connectors.md`);
  const scope = connector.slug === BUILT_IN_SLUG ? 'the core work tools (names without a dot)' : `the tools named \`${connector.slug}.<tool>\``;
  const lines = [
    `# ${oneLine(connector.name, 120)}`,
    '',
    '## Overview',
    '',
    oneLine(connector.overview, 2000),
    '',
    '## Set-up',
    '',
    `1. Get a credential: an agent API key (\`POST /api/agents/{agentId}/keys\`, shown once), the run JWT an agent receives in its run, or a board API key for an operator.`,
    `2. Point an MCP client at \`${catalog.mcp.endpoint}\` (Streamable HTTP) with the header \`Authorization: Bearer <credential>\`; a run JWT adds \`X-Service-Run-Id\` as in every API call.`,
    `3. List the tools (\`tools/list\`) and call ${scope}. A call runs as the caller, in the caller's company, exactly as the HTTP API would.`,
    '',
    connector.slug === BUILT_IN_SLUG
      ? 'Plugin tools are listed beside these under `<plugin>.<tool>` names; see the other connectors.'
      : `Without MCP, the same tools run through \`POST /api/plugins/tools/execute\` with \`{"tool": "${connector.slug}.<tool>", "input": {...}}\`.`,
    '',
    '## Tools',
    '',
  ];
  for (const tool of connector.tools) {
    lines.push(`### \`${tool.name}\``, '', oneLine(tool.description, 2000), '');
    if (tool.inputSchema) lines.push('Input:', '', schemaBlock(tool.inputSchema), '');
  }
  return document(lines);
}
