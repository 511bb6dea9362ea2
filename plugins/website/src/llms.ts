import type { RouteRequest } from '@keel/sdk/plugin';
import type { WebsiteContext } from './context.ts';
import { connectorsOf } from './connectors.ts';
import { document, oneLine } from './markdown.ts';

/**
 * /llms.txt: what this instance serves, for a model or a person reading it cold. Generated on
 * every request from the host's catalog, so it names exactly the plugins, routes and tools
 * that are enabled now.
 */
export async function llmsText(_req: RouteRequest, ctx: WebsiteContext): Promise<string> {
  const catalog = await ctx.catalog.get();
  const lines = [
    '# Keel',
    '',
    '> A self-hosted platform for running AI agents on behalf of companies. Everything beyond tenancy, authentication, activity, secrets and the run ledger is a plugin; this overview is generated from the plugins enabled on this instance.',
    '',
    '## API',
    '',
    '- [OpenAPI document](/api/openapi.json): every route of this instance (kernel and plugins), with schemas.',
    '- Base path `/api`, JSON bodies. Authenticate with `Authorization: Bearer <key>`: a board API key (operators), an agent API key, or the JWT of an agent\'s run (with `X-Service-Run-Id`).',
    '- Errors are JSON: `{"error": "...", "code": "...", "requestId": "..."}`.',
    '',
    '## MCP',
    '',
    `- \`POST ${catalog.mcp.endpoint}\` (Streamable HTTP, authenticated like the API): the core work tools (${catalog.mcp.coreTools.map((tool) => `\`${tool.name}\``).join(', ')}) and every tool of every enabled plugin, named \`<plugin>.<tool>\`.`,
    `- \`POST ${catalog.mcp.publicEndpoint}\` (public, read-only): search and read this API's documentation, the OpenAPI document and the connectors.`,
    '- [Connectors](/product/connectors.md): one page per connector with its set-up and tools.',
    '',
    '## Plugins',
    '',
  ];
  for (const plugin of catalog.plugins) {
    lines.push(`### ${oneLine(plugin.displayName, 120)} (\`${plugin.key}\` ${oneLine(plugin.version, 40)})`, '');
    if (plugin.description) lines.push(oneLine(plugin.description, 600), '');
    if (plugin.routes.length) {
      lines.push('Routes:', '');
      for (const route of plugin.routes) lines.push(`- \`${route.method} ${route.path}\` (${route.auth})${route.description ? `: ${oneLine(route.description)}` : ''}`);
      lines.push('');
    }
    if (plugin.tools.length) {
      lines.push('Tools:', '');
      for (const tool of plugin.tools) lines.push(`- \`${tool.name}\`: ${oneLine(tool.description)}`);
      lines.push('');
    }
  }
  lines.push('## Connectors', '');
  for (const connector of connectorsOf(catalog)) lines.push(`- [${oneLine(connector.name, 120)}](/product/connectors/${connector.slug}.md): ${connector.tools.length} tools`);
  return document(lines);
}
