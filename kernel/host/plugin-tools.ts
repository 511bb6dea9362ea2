import type { ToolManifest } from '../../sdk/plugin/manifest.ts';
import type { ExtensionHost, LoadedPlugin } from './extension-host.ts';
import { isApproved } from './tool-approvals.ts';

/** A tool of an enabled plugin, under the name every caller uses: `<pluginKey>.<toolKey>`. */
export interface EnabledTool { name: string; plugin: LoadedPlugin; tool: ToolManifest }

/**
 * The approved tools of enabled plugins granted `tools.register`, in plugin key order: what
 * GET /api/plugins/tools lists, POST /api/plugins/tools/execute runs, MCP offers and the
 * instance catalog describes. One list, so none of them can disagree about a tool. A tool new
 * or changed since an operator approved it is withheld from all of them (tool-approvals.ts).
 */
export function enabledTools(host: ExtensionHost): EnabledTool[] {
  const tools: EnabledTool[] = [];
  for (const plugin of [...host.plugins.values()].sort((a, b) => a.key.localeCompare(b.key))) {
    if (!(plugin.row.granted_capabilities ?? []).includes('tools.register')) continue;
    for (const tool of plugin.manifest.tools ?? []) if (isApproved(plugin.row, tool)) tools.push({ name: `${plugin.key}.${tool.key}`, plugin, tool });
  }
  return tools;
}

/**
 * One tool by its full name: undefined when no enabled plugin offers it; `withheld` when it
 * is offered but new or changed since it was approved (callers refuse it, saying why).
 */
export function enabledTool(host: ExtensionHost, name: string): (EnabledTool & { withheld: boolean }) | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const plugin = host.plugins.get(name.slice(0, dot));
  const tool = plugin?.manifest.tools?.find((t) => t.key === name.slice(dot + 1));
  if (!plugin || !tool || !(plugin.row.granted_capabilities ?? []).includes('tools.register')) return undefined;
  return { name, plugin, tool, withheld: !isApproved(plugin.row, tool) };
}
