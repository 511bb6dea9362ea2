import type { PluginManifest, ToolManifest } from '../../sdk/plugin/manifest.ts';
import { toolTextIssues, toolTextRefusal } from '../../sdk/manifest/tool-text.ts';
import { KeelError } from '../http/errors.ts';
import type { LoadedPlugin } from './loaded-plugin.ts';
import { isApproved } from './tool-approvals.ts';

/** What the tool lists read of the host: the plugins this process runs. */
export interface RunningPlugins { readonly plugins: ReadonlyMap<string, LoadedPlugin> }

/** A tool of an enabled plugin, under the name every caller uses: `<pluginKey>.<toolKey>`. */
export interface EnabledTool { name: string; plugin: LoadedPlugin; tool: ToolManifest }

/**
 * The approved tools of enabled plugins granted `tools.register`, in plugin key order: what
 * GET /api/plugins/tools lists, POST /api/plugins/tools/execute runs, MCP offers and the
 * instance catalog describes. One list, so none of them can disagree about a tool. A tool new
 * or changed since an operator approved it is withheld from all of them (tool-approvals.ts).
 * A tool whose listed text hides characters (sdk/manifest/tool-text.ts) is never offered: the
 * manifest check refuses it at install, upgrade and enable, and a manifest stored before that
 * check existed is caught here.
 */
export function enabledTools(host: RunningPlugins): EnabledTool[] {
  const tools: EnabledTool[] = [];
  for (const plugin of [...host.plugins.values()].sort((a, b) => a.key.localeCompare(b.key))) {
    if (!(plugin.row.granted_capabilities ?? []).includes('tools.register')) continue;
    for (const tool of plugin.manifest.tools ?? []) if (isApproved(plugin.row, tool) && !toolTextRefusal(tool)) tools.push({ name: `${plugin.key}.${tool.key}`, plugin, tool });
  }
  return tools;
}

/**
 * One tool by its full name: undefined when no enabled plugin offers it; `withheld` when it
 * is offered but new or changed since it was approved (callers refuse it, saying why).
 */
export function enabledTool(host: RunningPlugins, name: string): (EnabledTool & { withheld: boolean }) | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const plugin = host.plugins.get(name.slice(0, dot));
  const tool = plugin?.manifest.tools?.find((t) => t.key === name.slice(dot + 1));
  if (!plugin || !tool || !(plugin.row.granted_capabilities ?? []).includes('tools.register') || toolTextRefusal(tool)) return undefined;
  return { name, plugin, tool, withheld: !isApproved(plugin.row, tool) };
}

/**
 * Enabling registers a plugin's tools (and approves them): a stored manifest whose tools hide
 * characters in what agents are shown is refused, as at install (422 invalid_manifest, naming
 * the field and the character). Such a manifest can only have been stored before the check.
 */
export function assertToolTextsShown(key: string, manifest: PluginManifest): void {
  const issues = toolTextIssues(manifest.tools);
  if (issues.length === 0) return;
  const [first] = issues;
  throw new KeelError(422, 'invalid_manifest', `Invalid manifest of ${key}: ${first!.path} ${first!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`, { issues });
}
