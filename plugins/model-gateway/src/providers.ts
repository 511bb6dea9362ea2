import { PluginError, respond, type ModelPrice, type RouteRequest } from '@keel/sdk/plugin';
import type { GatewayContext, Kind } from './context.ts';
import { asProvider, PROVIDER_COLUMNS, providerJson, type ProviderRow } from './provider-json.ts';
import { checkedBaseUrl, checkedModels, checkedReference, isReference, storedKey, type ApiKeyInput, type KeyReference } from './provider-input.ts';

interface ProviderBody {
  name?: string; kind?: Kind; baseUrl?: string; apiKey?: ApiKeyInput; models?: ModelPrice[];
  allowUnpricedModels?: boolean; isDefault?: boolean;
}

/** The provider a route's entityParam named (the host checked the caller may reach its company). */
export async function providerById(ctx: GatewayContext, providerId: string): Promise<ProviderRow> {
  const { rows } = await ctx.db.query(`select ${PROVIDER_COLUMNS} from providers where id = $1 and company_id = $2`, [providerId, ctx.invocation.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Model provider not found');
  return asProvider(rows[0]);
}

async function assertNameFree(ctx: GatewayContext, companyId: string, name: string, exceptId: string | null): Promise<void> {
  const { rows } = await ctx.db.query('select id from providers where company_id = $1 and name = $2 and ($3::uuid is null or id <> $3::uuid)', [companyId, name, exceptId]);
  if (rows.length > 0) throw new PluginError(409, 'model_provider_name_taken', `A model provider named "${name}" already exists in this company`, { field: 'name' });
}

/** One default per kind: a new default takes the place of the old one (in the caller's transaction). */
async function clearDefault(ctx: GatewayContext, companyId: string, kind: Kind, exceptId: string): Promise<string[]> {
  const { rows } = await ctx.db.query(
    'update providers set is_default = false, updated_at = now() where company_id = $1 and kind = $2 and is_default and id <> $3 returning id::text as id',
    [companyId, kind, exceptId]);
  return rows.map((row) => String(row.id));
}

/** The key a body gives, checked; a plain key is only stored later (after every check). */
async function keyOf(ctx: GatewayContext, key: ApiKeyInput | undefined): Promise<KeyReference | string | undefined> {
  if (key === undefined) return undefined;
  if (isReference(key)) return checkedReference(ctx, key);
  if (key.trim().length === 0) throw new PluginError(422, 'invalid_api_key', 'apiKey must not be blank', { field: 'apiKey' }, { issues: [{ path: 'apiKey', message: 'must not be blank' }] });
  return key;
}

/** What an activity entry says of a change: the fields, never a key (a new key shows as its reference). */
function changeDetails(body: ProviderBody, row: ProviderRow, extra: Record<string, unknown> = {}) {
  return {
    name: row.name, kind: row.kind, changed: Object.keys(body).sort(),
    baseUrl: row.base_url, apiKeySecretId: row.api_key_secret_id, isDefault: row.is_default, ...extra,
  };
}

export async function listProviders(request: RouteRequest, ctx: GatewayContext) {
  const { rows } = await ctx.db.query(`select ${PROVIDER_COLUMNS} from providers where company_id = $1 order by name, id`, [request.companyId]);
  return rows.map((row) => providerJson(asProvider(row)));
}

export async function getProvider(request: RouteRequest, ctx: GatewayContext) {
  return providerJson(await providerById(ctx, request.params.providerId!));
}

export async function createProvider(request: RouteRequest, ctx: GatewayContext) {
  const body = request.body as ProviderBody & { name: string; kind: Kind; baseUrl: string; apiKey: ApiKeyInput };
  const companyId = request.companyId!;
  const name = body.name.trim();
  await assertNameFree(ctx, companyId, name, null);
  const baseUrl = await checkedBaseUrl(ctx, body.baseUrl);
  const models = checkedModels(body.models ?? []);
  const key = await keyOf(ctx, body.apiKey);
  const { rows: ids } = await ctx.db.query('select gen_random_uuid()::text as id');
  const id = String(ids[0]!.id);
  const reference = typeof key === 'string' ? await storedKey(ctx, id, name, key) : key!;
  const replaced = body.isDefault ? await clearDefault(ctx, companyId, body.kind, id) : [];
  const { rows } = await ctx.db.query(
    `insert into providers (id, company_id, name, kind, base_url, api_key_secret_id, api_key_version, models, allow_unpriced_models, is_default)
     values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10) on conflict do nothing returning ${PROVIDER_COLUMNS}`,
    [id, companyId, name, body.kind, baseUrl, reference.secretId, reference.version, JSON.stringify(models), body.allowUnpricedModels ?? false, body.isDefault ?? false]);
  // A concurrent create took the name, or made its own default of the kind, after the checks above.
  if (!rows[0]) throw new PluginError(409, 'model_provider_conflict', `Another change of this company's model providers took the name "${name}" or the default ${body.kind} provider at the same time; try again`);
  const row = asProvider(rows[0]);
  await ctx.activity.record({ action: 'model_provider.created', entityType: 'model_provider', entityId: id, details: changeDetails(body, row, { replacedDefault: replaced[0] ?? null }) });
  return respond(201, providerJson(row));
}

export async function updateProvider(request: RouteRequest, ctx: GatewayContext) {
  const body = request.body as ProviderBody;
  const before = await providerById(ctx, request.params.providerId!);
  const name = body.name?.trim();
  if (name !== undefined && name !== before.name) await assertNameFree(ctx, before.company_id, name, before.id);
  const baseUrl = body.baseUrl === undefined ? undefined : await checkedBaseUrl(ctx, body.baseUrl);
  const models = body.models === undefined ? undefined : checkedModels(body.models);
  const key = await keyOf(ctx, body.apiKey);
  const reference = typeof key === 'string' ? await storedKey(ctx, before.id, name ?? before.name, key) : key;
  const replaced = body.isDefault === true ? await clearDefault(ctx, before.company_id, before.kind, before.id) : [];
  const { rows } = await ctx.db.query(
    `update providers set name = coalesce($2, name), base_url = coalesce($3, base_url),
        api_key_secret_id = case when $4 then $5::uuid else api_key_secret_id end,
        api_key_version = case when $4 then $6::integer else api_key_version end,
        models = coalesce($7::jsonb, models), allow_unpriced_models = coalesce($8, allow_unpriced_models),
        is_default = coalesce($9, is_default), updated_at = now()
      where id = $1 returning ${PROVIDER_COLUMNS}`,
    [before.id, name ?? null, baseUrl ?? null, reference !== undefined, reference?.secretId ?? null, reference?.version ?? null,
      models === undefined ? null : JSON.stringify(models), body.allowUnpricedModels ?? null, body.isDefault ?? null]);
  const row = asProvider(rows[0]!);
  await ctx.activity.record({
    action: 'model_provider.updated', entityType: 'model_provider', entityId: row.id,
    details: changeDetails(body, row, { keyReplaced: reference !== undefined, replacedDefault: replaced[0] ?? null }),
  });
  return providerJson(row);
}

export async function deleteProvider(request: RouteRequest, ctx: GatewayContext) {
  const before = await providerById(ctx, request.params.providerId!);
  await ctx.db.query('delete from providers where id = $1', [before.id]);
  await ctx.activity.record({ action: 'model_provider.deleted', entityType: 'model_provider', entityId: before.id, details: { name: before.name, kind: before.kind, apiKeySecretId: before.api_key_secret_id } });
  return { ok: true, id: before.id };
}

/** `company.deleted`: the company's providers, limits and counters go with it (its vault secrets go with the kernel's company). */
export async function onCompanyDeleted(payload: Record<string, unknown>, ctx: GatewayContext): Promise<void> {
  const companyId = String(payload.companyId ?? '');
  if (!companyId) return;
  for (const table of ['providers', 'limits', 'minute_counters', 'metered_calls']) {
    await ctx.db.query(`delete from ${table} where company_id = $1`, [companyId]);
  }
}
