import type { HiddenEntitySource } from '../activity/activity-log.ts';
import type { Queryable } from '../db/database.ts';
import type { Logger } from 'pino';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { entitySql } from './contributions/route-entities.ts';
import { ident } from './plugin-login-roles.ts';

/**
 * The rows plugins hide, for the company activity feed: each `database.entities` entry with a
 * `hiddenColumn` of a loaded plugin (a hidden issue of the work plugin). The kernel reads the
 * plugin's table as it does for entity routes. Entity types that are the kernel's own (agent,
 * run, ...) are never hidden by a plugin: a plugin may not take entries about them out of the
 * feed. A lookup that fails (a column the migrations did not create) hides nothing and is
 * logged, so that one plugin's mistake never breaks the feed.
 */
export function hiddenEntitySources(manifests: Iterable<PluginManifest>, log: Logger): HiddenEntitySource[] {
  const sources: HiddenEntitySource[] = [];
  for (const manifest of manifests) {
    const database = manifest.database;
    for (const entity of database?.entities ?? []) {
      if (!database || !entity.hiddenColumn) continue;
      const { table, companyColumn } = entitySql(database.namespace, entity);
      // The kernel's entity types are those keel_bridge.activity_entity_kinds() lists (one list, in the database).
      const sql = `select id::text as id from ${table} where ${ident(entity.hiddenColumn)} is not null and ${companyColumn} = ?
                     and not (lower(?) = any(keel_bridge.activity_entity_kinds()))`;
      sources.push({
        entityType: entity.type,
        hiddenIds: async (db: Queryable, companyId: string) => {
          try {
            return (await db.query<{ id: string }>(sql, [companyId, entity.type])).map((row) => row.id);
          } catch (error) {
            log.warn({ plugin: manifest.key, entity: entity.type, err: error }, 'could not read the hidden rows of a plugin entity; its entries stay in the activity feed');
            return [];
          }
        },
      });
    }
  }
  return sources;
}
