import type { ToolManifest } from '../plugin/manifest.ts';
import { describeInvisibleCharacter, findInvisibleCharacter } from '../shared/invisible-characters.ts';

export interface ToolTextIssue { path: string; message: string }

/**
 * What of a plugin's tools is listed to agents as written (MCP `tools/list`, GET
 * /api/plugins/tools, the tool catalog): the key, the description and the whole input schema,
 * property names and every string in it (descriptions, titles, enum values). None of it may
 * carry an invisible, bidi or control character (sdk/shared/invisible-characters.ts): an agent
 * would follow an instruction hidden in tag characters, and an operator approving the tool would
 * not see it. Each issue names the field and the character: `tools.0.description contains U+202E
 * (RIGHT-TO-LEFT OVERRIDE)`. The manifest check refuses them at install and upgrade; the host
 * checks stored manifests again before it offers a tool (kernel/host/plugin-tools.ts).
 */
export function toolTextIssues(tools: readonly ToolManifest[] | undefined): ToolTextIssue[] {
  const issues: ToolTextIssue[] = [];
  for (const [index, tool] of (tools ?? []).entries()) {
    const at = `tools.${index}`;
    checkText(issues, `${at}.key`, tool.key, false);
    checkText(issues, `${at}.description`, tool.description, true);
    checkValue(issues, `${at}.inputSchema`, tool.inputSchema, 0);
  }
  return issues;
}

const refusals = new WeakMap<ToolManifest, string | null>();

/**
 * The first issue of one tool, or null: for a host that refuses to offer a tool stored before
 * the check existed. Remembered per manifest object, since a host asks on every listing.
 */
export function toolTextRefusal(tool: ToolManifest): string | null {
  let refusal = refusals.get(tool);
  if (refusal === undefined) {
    const [first] = toolTextIssues([tool]);
    refusal = first ? `${first.path.replace(/^tools\.0/, tool.key)} ${first.message}` : null;
    refusals.set(tool, refusal);
  }
  return refusal;
}

// The manifest's size bounds a schema's width; this bounds how deep the walk goes.
const MAX_DEPTH = 64;

function checkText(issues: ToolTextIssue[], path: string, text: unknown, allowLineBreaks: boolean): void {
  if (typeof text !== 'string') return;
  const found = findInvisibleCharacter(text, { allowLineBreaks });
  if (found) issues.push({ path, message: describeInvisibleCharacter(found) });
}

function checkValue(issues: ToolTextIssue[], path: string, value: unknown, depth: number): void {
  if (typeof value === 'string') return checkText(issues, path, value, true);
  if (!value || typeof value !== 'object') return;
  if (depth > MAX_DEPTH) {
    issues.push({ path, message: `nests deeper than ${MAX_DEPTH} levels` });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkValue(issues, `${path}.${i}`, item, depth + 1));
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    const found = findInvisibleCharacter(key, { allowLineBreaks: false });
    if (found) {
      issues.push({ path, message: `has a property name that ${describeInvisibleCharacter(found)}` });
      continue;
    }
    checkValue(issues, `${path}.${key}`, item, depth + 1);
  }
}
