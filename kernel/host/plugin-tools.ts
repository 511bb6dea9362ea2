import type { ToolManifest } from '../../sdk/plugin/manifest.ts';
import type { ExtensionHost, LoadedPlugin } from './extension-host.ts';

/** A tool of an enabled plugin, under the name every caller uses: `<pluginKey>.<toolKey>`. */
export interface EnabledTool { name: string; plugin: LoadedPlugin; tool: ToolManifest }

/**
 * The tools of enabled plugins granted `tools.register`, in plugin key order: what
 * GET /api/plugins/tools lists, POST /api/plugins/tools/execute runs, MCP offers and the
 * instance catalog describes. One list, so none of them can disagree about a tool.
 */
export function enabledTools(host: ExtensionHost): EnabledTool[] {
  const tools: EnabledTool[] = [];
  for (const plugin of [...host.plugins.values()].sort((a, b) => a.key.localeCompare(b.key))) {
    if (!(plugin.row.granted_capabilities ?? []).includes('tools.register')) continue;
    for (const tool of plugin.manifest.tools ?? []) tools.push({ name: `${plugin.key}.${tool.key}`, plugin, tool });
  }
  return tools;
}

/** One tool by its full name, or undefined when no enabled plugin offers it. */
export function enabledTool(host: ExtensionHost, name: string): EnabledTool | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const plugin = host.plugins.get(name.slice(0, dot));
  const tool = plugin?.manifest.tools?.find((t) => t.key === name.slice(dot + 1));
  if (!plugin || !tool || !(plugin.row.granted_capabilities ?? []).includes('tools.register')) return undefined;
  return { name, plugin, tool };
}
