import type { Context } from 'koa';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../sdk/manifest/plugin-schema-ajv.ts';
import { invocationCaller, type Actor } from '../auth/actor.ts';
import { KeelError, notFound, validationFailed } from '../http/errors.ts';
import { respond } from './contributions/route-answer.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import type { ExtensionHost } from './extension-host.ts';
import { enabledTool } from './plugin-tools.ts';

export interface ToolCall { tool: string; input?: unknown; companyId?: string }

/**
 * Runs a plugin's tool for the request's caller: the one path of POST /api/plugins/tools/execute
 * and of MCP's tools/call. The tool must be offered by an enabled plugin granted
 * `tools.register`, as an operator approved it (tool-approvals.ts); an agent acts in its own company, a board caller in the company it names
 * (access checked); the input is checked against the tool's own schema; the plugin runs with
 * the caller's identity and run, in one transaction (a `readOnly` tool: read-only, in none). Failures throw the KeelError the route
 * answers (the plugin's own status and code kept).
 */
export async function executeTool(ctx: Context, host: ExtensionHost, call: ToolCall): Promise<{ tool: string; result: unknown }> {
  const actor = ctx.state.actor as Actor;
  const found = enabledTool(host, call.tool);
  if (!found) throw notFound(`No enabled tool "${call.tool}"`, 'tool_not_found');
  if (found.withheld) throw toolChangePending(found.plugin.key, found.tool.key);
  let companyId: string | null = actor.kind === 'agent' ? actor.companyId : null;
  if (call.companyId !== undefined) {
    const { company } = await companyForRequest(ctx, host.kernel.db, call.companyId);
    companyId = company.id;
  }
  const input = call.input ?? {};
  const issues = schemaIssues(pluginBodyAjv, found.tool.inputSchema, input, '(input)');
  if (issues.length) throw validationFailed(describeIssues('tool input', issues), issues);
  // A read-only tool runs as a read-only route does: no transaction, no activity entry.
  const result = await host.invoke(found.plugin.key, 'tool', found.tool.key, input, { companyId, ...invocationCaller(actor) }, found.tool.readOnly
    ? { transactional: false, readOnly: true, defaultActivity: null }
    : { transactional: true, defaultActivity: { action: `plugin.${found.plugin.key}.tool.${found.tool.key}`, entityType: 'plugin_tool', entityId: call.tool } });
  // The plugin's transaction wrote the entry (its own, or the host's default one); a read-only tool changed nothing.
  ctx.state.activityWritten = true;
  // A plugin's failure is answered as the route answers it (its status and code kept): respond throws it.
  if (!result.ok) respond(ctx, result, 200);
  return { tool: call.tool, result: result.value === undefined ? null : JSON.parse(result.value) };
}

/** A tool new or changed since its approval: refused until an instance admin approves the change. */
export function toolChangePending(pluginKey: string, toolKey: string): KeelError {
  return new KeelError(409, 'tool_change_pending',
    `${pluginKey}.${toolKey} is new or changed since an operator approved this plugin's tools, and is withheld until an instance admin approves it: GET /api/plugins/${pluginKey}/tool-changes, then POST /api/plugins/${pluginKey}/tool-changes/approve`,
    { details: { plugin: pluginKey, tool: toolKey } });
}
