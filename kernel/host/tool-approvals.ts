import { createHash } from 'node:crypto';
import type { JsonSchema, PluginManifest, ToolManifest } from '../../sdk/plugin/manifest.ts';
import { canonical } from '../../sdk/plugin/fingerprint.ts';
import type { Row } from '../db/database.ts';
import type { KernelServices } from '../services.ts';

/**
 * Tool-change approval. A tool's description and input schema are instructions to a model, so
 * they are treated as code: the operator's enable approves the tools a plugin has then, and a
 * tool an upgrade adds or changes (its key, description or input schema) is withheld from
 * agents (not listed, refused when called) until an instance admin approves the change. The
 * approvals live on the plugin's row (`plugins.approved_tools`, migration 0028).
 */
export interface ApprovedTool { fingerprint: string; description: string; inputSchema: JsonSchema }
export type ToolApprovals = Record<string, ApprovedTool>;

export interface PendingToolChange {
  key: string;
  name: string;
  change: 'added' | 'changed';
  fingerprint: string;
  description: string;
  inputSchema: JsonSchema;
  /** What was approved before (a changed tool), to compare with. */
  approved: ApprovedTool | null;
}

const fingerprints = new WeakMap<ToolManifest, string>();

/** sha-256 of the canonical JSON of the tool's key, description and input schema. */
export function toolFingerprint(tool: ToolManifest): string {
  let known = fingerprints.get(tool);
  if (!known) {
    known = createHash('sha256').update(canonical({ name: tool.key, description: tool.description, inputSchema: tool.inputSchema })).digest('hex');
    fingerprints.set(tool, known);
  }
  return known;
}

/** Whether the tool, as the manifest has it now, is the one the operator approved. No approvals at all (never enabled) approves nothing. */
export function isApproved(row: Row, tool: ToolManifest): boolean {
  const approved = (row.approved_tools as ToolApprovals | null)?.[tool.key];
  return approved !== undefined && approved.fingerprint === toolFingerprint(tool);
}

/** The tools of a plugin's stored manifest that are new or changed since they were approved. */
export function pendingToolChanges(row: Row): PendingToolChange[] {
  const manifest = row.manifest as PluginManifest;
  const approvals = (row.approved_tools as ToolApprovals | null) ?? {};
  return (manifest.tools ?? []).filter((tool) => !isApproved(row, tool)).map((tool) => ({
    key: `${row.key}.${tool.key}`,
    name: tool.key,
    change: approvals[tool.key] ? 'changed' : 'added',
    fingerprint: toolFingerprint(tool),
    description: tool.description,
    inputSchema: tool.inputSchema,
    approved: approvals[tool.key] ?? null,
  }));
}

/** The approvals of these tools as they are now. */
export function approvalsOf(tools: readonly ToolManifest[]): ToolApprovals {
  return Object.fromEntries(tools.map((tool) => [tool.key, { fingerprint: toolFingerprint(tool), description: tool.description, inputSchema: tool.inputSchema }]));
}

/**
 * Plugins granted before approvals were recorded: the grant they were enabled with covers the
 * tools they have, as an enable does now. Idempotent; processes starting together write the same.
 */
export async function recordMissingApprovals(kernel: KernelServices): Promise<void> {
  const rows = await kernel.db.query<{ key: string; manifest: PluginManifest }>('select key, manifest from plugins where approved_tools is null and first_granted_at is not null');
  for (const row of rows) {
    await kernel.db.exec('update plugins set approved_tools = ?::jsonb where key = ? and approved_tools is null', [JSON.stringify(approvalsOf(row.manifest.tools ?? [])), row.key]);
  }
}
