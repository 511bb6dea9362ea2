import { defineCapability, method } from './define.ts';
import { record } from './schemas.ts';

/** A route of an enabled plugin, as the host serves it. */
export interface CatalogRoute { method: string; path: string; auth: string; description: string | null }
/** A tool of an enabled plugin (granted tools.register): `name` is `<pluginKey>.<key>`, as MCP and POST /api/plugins/tools/execute call it. */
export interface CatalogTool { name: string; key: string; description: string; inputSchema: Record<string, unknown> }
export interface CatalogPlugin { key: string; displayName: string; description: string | null; version: string; routes: CatalogRoute[]; tools: CatalogTool[] }
/** What the instance serves: enabled plugins (key order) and the MCP endpoints with the kernel's own tools. */
export interface InstanceCatalog {
  plugins: CatalogPlugin[];
  mcp: { endpoint: string; publicEndpoint: string; coreTools: Array<{ name: string; description: string }> };
}
export interface CatalogCapability { get(): Promise<InstanceCatalog> }

/**
 * Instance-level facts any visitor of the instance's website may read: nothing of a company,
 * no configuration, no secrets (a tool's description and schema are public documentation).
 */
export const catalogRead = defineCapability<{ catalog: CatalogCapability }>()({
  id: 'catalog.read',
  summary: 'Read what the instance serves: enabled plugins with their routes and tools, and the MCP endpoints',
  members: { catalog: { get: method('kernel', [], record, { scope: 'instance' }) } },
});
