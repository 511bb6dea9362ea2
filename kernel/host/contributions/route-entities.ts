import type { EntityManifest, PluginManifest, RouteManifest } from '../../../sdk/plugin/manifest.ts';
import type { Queryable } from '../../db/database.ts';
import { notFound } from '../../http/errors.ts';
import { isUuid } from '../../http/validate.ts';
import { ident } from '../plugin-login-roles.ts';

/**
 * Routes that name a row of a plugin's table (`entityParam`, an issue's `/api/issues/{issueId}`)
 * get the row's company from the kernel before the isolate runs, as `companyParam` routes get
 * theirs from the path: the host reads the row's company column in the plugin's schema (the
 * kernel's role may read it, see plugin-login-roles.ts), checks the caller's access to that
 * company and makes it the call's company. The plugin sees the row's id whichever way the path
 * named it, and never a row of a company its caller cannot reach.
 */
export interface EntityLookup {
  param: string;
  /** `Issue not found`: an unknown id and a malformed one answer alike. */
  missing: string;
  byId: string;
  byAlias: string | null;
  aliasUpperCase: boolean;
}

/** An entity's table in the plugin's schema and its company column, quoted for the kernel's own SQL. */
export function entitySql(namespace: string, entity: EntityManifest): { table: string; companyColumn: string } {
  return { table: `${ident(`plugin_${namespace}`)}.${ident(entity.table)}`, companyColumn: ident(entity.companyColumn ?? 'company_id') };
}

export function entityLookup(manifest: PluginManifest, route: RouteManifest): EntityLookup | undefined {
  if (!route.entityParam || !manifest.database) return undefined;
  const entity = manifest.database.entities?.find((candidate) => candidate.type === route.entityParam!.entity);
  if (!entity) return undefined;
  const { table, companyColumn } = entitySql(manifest.database.namespace, entity);
  const select = `select id::text as id, ${companyColumn}::text as company_id from ${table}`;
  return {
    param: route.entityParam.param,
    missing: `${label(entity)} not found`,
    byId: `${select} where id = ?`,
    byAlias: entity.aliasColumn ? `${select} where ${ident(entity.aliasColumn)} = ? limit 1` : null,
    aliasUpperCase: entity.aliasUpperCase === true,
  };
}

function label(entity: EntityManifest): string {
  const words = entity.type.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The row the parameter names, or 404: by id when it is a uuid, else by the alias column. */
export async function resolveEntity(db: Queryable, lookup: EntityLookup, value: string | undefined): Promise<{ id: string; companyId: string }> {
  const text = value ?? '';
  let row: { id: string; company_id: string } | undefined;
  const byId: boolean = isUuid(text);
  if (byId) row = await db.maybeOne(lookup.byId, [text.toLowerCase()]);
  else if (lookup.byAlias && text.length > 0 && text.length <= 200) row = await db.maybeOne(lookup.byAlias, [lookup.aliasUpperCase ? text.toUpperCase() : text]);
  if (!row?.company_id) throw notFound(lookup.missing);
  return { id: row.id, companyId: row.company_id };
}
