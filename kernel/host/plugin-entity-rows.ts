import type { Logger } from 'pino';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import type { PluginEntityRows } from '../tenancy/resource-resolvers.ts';
import { entitySql } from './contributions/route-entities.ts';

/**
 * Where the loaded plugins keep the rows of an entity type, for the kernel's questions about
 * resources it does not own (a resource membership of a work plugin project): each
 * `database.entities` entry of that type, read in the plugin's table by id and company column,
 * as entity routes read it (the kernel's role may read plugin tables, see plugin-login-roles.ts).
 * A lookup that fails (a table the migrations did not create) finds nothing and is logged, so
 * that one plugin's mistake answers 404 rather than 500.
 */
export function pluginEntityRows(manifests: Iterable<PluginManifest>, type: string, log: Logger): PluginEntityRows[] {
  const found: PluginEntityRows[] = [];
  for (const manifest of manifests) {
    const database = manifest.database;
    for (const entity of database?.entities ?? []) {
      if (!database || entity.type !== type) continue;
      const { table, companyColumn } = entitySql(database.namespace, entity);
      const sql = `select 1 from ${table} where id = ? and ${companyColumn} = ?`;
      found.push({
        plugin: manifest.key,
        holds: async (db, companyId, id) => {
          try {
            return !!(await db.maybeOne(sql, [id, companyId]));
          } catch (error) {
            log.warn({ plugin: manifest.key, entity: type, err: error }, 'could not read the rows of a plugin entity; none of them is found');
            return false;
          }
        },
      });
    }
  }
  return found;
}
