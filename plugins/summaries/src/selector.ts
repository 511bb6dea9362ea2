import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { SCOPE_KINDS, SLOT_KEYS, type Row, type ScopeKind, type SummariesContext } from './context.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface Selector { companyId: string; scopeKind: ScopeKind; scopeId: string | null; slotKey: string }

/** Every summary route answers 404 while the instance's experimental `enableSummaries` is not true. */
export async function assertSummariesEnabled(ctx: SummariesContext): Promise<void> {
  const settings = await ctx.instanceSettings.get('experimental');
  if (settings.enableSummaries !== true) throw new PluginError(404, 'summaries_not_enabled', 'Summaries are not enabled');
}

interface Issue { path: string[]; message: string }

/**
 * The slot a request names: scope kind and slot key from the path, scopeId from the query or
 * (for the generate and write bodies) the body. 422 `Invalid summary slot selector` with the
 * issues found: an unknown kind or key, a scopeId that is not a uuid, a project or workspace
 * slot without one, an overview slot with one.
 */
export function selectorOf(req: RouteRequest): Selector {
  const body = (req.body ?? {}) as Row;
  const fromQuery = req.query.scopeId;
  const raw = body.scopeId ?? (fromQuery === '' ? undefined : fromQuery);
  const scopeKind = req.params.scopeKind ?? '';
  const slotKey = req.params.slotKey ?? '';
  const issues: Issue[] = [];
  if (!(SCOPE_KINDS as readonly string[]).includes(scopeKind)) issues.push({ path: ['scopeKind'], message: `scopeKind must be one of ${SCOPE_KINDS.join(', ')}` });
  if (!(SLOT_KEYS as readonly string[]).includes(slotKey)) issues.push({ path: ['slotKey'], message: `slotKey must be one of ${SLOT_KEYS.join(', ')}` });
  let scopeId: string | null = null;
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'string' || !UUID.test(raw)) issues.push({ path: ['scopeId'], message: 'scopeId must be a uuid' });
    else scopeId = raw.toLowerCase();
  }
  if (scopeKind === 'workspaces_overview' && raw !== undefined && raw !== null) {
    issues.push({ path: ['scopeId'], message: 'workspaces_overview summary slots must not include scopeId' });
  }
  if ((scopeKind === 'project' || scopeKind === 'project_workspace') && (raw === undefined || raw === null)) {
    issues.push({ path: ['scopeId'], message: `${scopeKind} summary slots require scopeId` });
  }
  if (issues.length) throw new PluginError(422, 'invalid_summary_slot_selector', 'Invalid summary slot selector', { issues });
  return { companyId: req.companyId!, scopeKind: scopeKind as ScopeKind, scopeId, slotKey };
}

/**
 * The project a slot's scope belongs to (null for the overview); 404 `Summary target not found`
 * for a project or workspace that is not the company's.
 */
export async function targetProject(ctx: SummariesContext, sel: Selector): Promise<string | null> {
  if (sel.scopeKind === 'workspaces_overview') return null;
  if (sel.scopeKind === 'project') {
    const project = await ctx.services.call<{ exists: boolean }>('work', 'project', { projectId: sel.scopeId });
    if (!project.exists) throw new PluginError(404, 'summary_target_not_found', 'Summary target not found');
    return sel.scopeId;
  }
  const { workspaces } = await ctx.services.call<{ workspaces: Array<{ projectId: string }> }>('work', 'project-workspaces', { workspaceIds: [sel.scopeId] });
  if (!workspaces[0]) throw new PluginError(404, 'summary_target_not_found', 'Summary target not found');
  return workspaces[0].projectId;
}

/** The slot's row, or null before anyone touched it. */
export async function findSlot(ctx: SummariesContext, sel: Selector, lock = false): Promise<Row | null> {
  const { rows } = await ctx.db.query(
    `select * from summary_slots where company_id = $1 and scope_kind = $2 and slot_key = $3 and scope_id is not distinct from $4::uuid${lock ? ' for update' : ''}`,
    [sel.companyId, sel.scopeKind, sel.slotKey, sel.scopeId]);
  return rows[0] ?? null;
}

/** The start of every summary route: enabled, then the selector, then its target. */
export async function resolveSlotRequest(req: RouteRequest, ctx: SummariesContext): Promise<{ sel: Selector; projectId: string | null }> {
  await assertSummariesEnabled(ctx);
  const sel = selectorOf(req);
  return { sel, projectId: await targetProject(ctx, sel) };
}
