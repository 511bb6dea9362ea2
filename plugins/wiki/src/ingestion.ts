import type { RouteRequest } from '@keel/sdk/plugin';
import type { WikiContext } from './context.ts';
import { INGEST_CAPS } from './ingest-caps.ts';
import { recordOperation } from './operations.ts';
import { DEFAULT_SPACE } from './paths.ts';
import { companyOf, ensureDefaultSpace } from './scope.ts';

/** Whether event ingestion is on for the company (off until a board user turns it on). */
export async function ingestionEnabled(ctx: WikiContext, companyId: string): Promise<boolean> {
  const { rows } = await ctx.db.query<{ enabled: boolean }>('select enabled from ingestion_settings where company_id = $1', [companyId]);
  return rows[0]?.enabled ?? false;
}

/** The company's ingestion: the setting, where it writes, the caps, and how much is waiting past the cursor. */
export async function ingestionState(ctx: WikiContext, companyId: string) {
  const { rows } = await ctx.db.query<{ enabled: boolean; updatedAt: string | null }>(
    'select enabled, updated_at as "updatedAt" from ingestion_settings where company_id = $1', [companyId]);
  const { rows: cursor } = await ctx.db.query<{ position: string }>('select position::text as position from ingestion_cursors where company_id = $1', [companyId]);
  const position = cursor[0]?.position ?? '0';
  const { rows: pending } = await ctx.db.query<{ sources: number; characters: number; total: number }>(
    `select count(*) filter (where position > $2::bigint)::int as sources,
            coalesce(sum(characters) filter (where position > $2::bigint), 0)::int as characters,
            count(*)::int as total
       from ingested_sources where company_id = $1`, [companyId, position]);
  return {
    companyId, enabled: rows[0]?.enabled ?? false, updatedAt: rows[0]?.updatedAt ?? null, spaceSlug: DEFAULT_SPACE, folder: 'raw/issues',
    caps: INGEST_CAPS,
    cursor: { position, pendingSources: pending[0]!.sources, pendingCharacters: pending[0]!.characters },
    sources: pending[0]!.total,
  };
}

export async function getIngestion(_req: RouteRequest, ctx: WikiContext) {
  return ingestionState(ctx, companyOf(ctx));
}

/** Turns ingestion on or off; a change is an operation of the default space. */
export async function putIngestion(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const { enabled } = req.body as { enabled: boolean };
  const before = await ingestionEnabled(ctx, companyId);
  await ctx.db.query(
    `insert into ingestion_settings (company_id, enabled, updated_by_type, updated_by_id) values ($1, $2, $3, $4)
     on conflict (company_id) do update set enabled = excluded.enabled, updated_by_type = excluded.updated_by_type, updated_by_id = excluded.updated_by_id, updated_at = now()`,
    [companyId, enabled, ctx.invocation.actor.type, ctx.invocation.actor.id]);
  if (before !== enabled) {
    await ensureDefaultSpace(ctx, companyId);
    await recordOperation(ctx, companyId, DEFAULT_SPACE, { kind: enabled ? 'enable_ingestion' : 'disable_ingestion' });
  }
  return ingestionState(ctx, companyId);
}
