import { KeelError } from '../../http/errors.ts';
import type { InvokeResult } from '../plugin-process.ts';

/**
 * A `perCompany` route (RouteManifest.perCompany) serves an instance admin across every
 * company without ever handing one call more than one company: the host calls the handler
 * once per company that is not archived (or those of them its selection names: companiesToServe),
 * in order, each its own invocation with that company, and merges the answers here. A failing call ends the round with its error; the calls before
 * it have committed (each company's work is its own transaction).
 */
export async function invokePerCompany(companies: readonly string[], sum: readonly string[], invoke: (companyId: string | null) => Promise<InvokeResult>): Promise<InvokeResult> {
  if (companies.length === 0) return invoke(null);
  let merged: unknown;
  let activityWritten = false;
  for (const [index, companyId] of companies.entries()) {
    const result = await invoke(companyId);
    if (!result.ok) return result;
    activityWritten ||= result.activityWritten;
    const raw = result.value ?? 'null';
    if (result.envelope || raw.startsWith('{"$response"')) {
      throw new KeelError(502, 'plugin_invalid_response', 'A perCompany route answers plain JSON: the host merges the answers and sets the status itself', { expose: true });
    }
    const value = JSON.parse(raw) as unknown;
    merged = index === 0 ? value : mergeAnswers(merged, value, new Set(sum));
  }
  return { ok: true, value: JSON.stringify(merged), activityWritten };
}

/**
 * The companies a perCompany route is called in: every active one (`active`, in its order),
 * or, when the route declares `select`, those of them the plugin's selection call names. The
 * selection (one read-only call serving no company, given the same request) answers the ids of
 * the companies the route has work in, so that an instance of many idle companies costs one
 * call, not one per company; it can only leave companies out, never add one. A failed
 * selection is the route's answer.
 */
export async function companiesToServe(active: readonly string[], select: (() => Promise<InvokeResult>) | null): Promise<{ companies: readonly string[] } | { failed: InvokeResult }> {
  if (!select || active.length === 0) return { companies: active };
  const result = await select();
  if (!result.ok) return { failed: result };
  let named: unknown;
  try { named = result.envelope ? undefined : JSON.parse(result.value ?? 'null'); } catch { named = undefined; }
  if (!Array.isArray(named) || !named.every((id) => typeof id === 'string')) {
    throw new KeelError(502, 'plugin_invalid_response', 'The selection of a perCompany route answers an array of company ids', { expose: true });
  }
  const chosen = new Set(named.map((id: string) => id.toLowerCase()));
  return { companies: active.filter((id) => chosen.has(id)) };
}

/**
 * Arrays concatenated, objects merged key by key, the numbers at the declared `sum` paths
 * (dotted, `counts.findings`) added up; any other value (a setting echoed, a flag) from the
 * first answer, since every company's call was given the same request.
 */
export function mergeAnswers(a: unknown, b: unknown, sum: ReadonlySet<string>, path = ''): unknown {
  if (typeof a === 'number' && typeof b === 'number') return sum.has(path) ? a + b : a;
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (isObject(a) && isObject(b)) {
    // No prototype, own keys only: a plugin's key named __proto__ or constructor stays a plain key.
    const out: Record<string, unknown> = Object.assign(Object.create(null), a);
    for (const [key, value] of Object.entries(b)) out[key] = Object.hasOwn(out, key) ? mergeAnswers(out[key], value, sum, path ? `${path}.${key}` : key) : value;
    return out;
  }
  return a === undefined ? b : a;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
