import type { Queryable } from '../db/database.ts';

/**
 * Answers whether a resource of some type exists in a company, where that resource really
 * lives. Agents are the kernel's own rows. Every other type (projects) is a plugin's: the
 * extension host tells the kernel where the enabled plugins keep the rows of each entity type
 * they declare (`database.entities` of their manifests, the declaration entity routes use), and
 * a resource exists when one of those tables holds the id in the company. With no enabled
 * plugin declaring a type, no resource of that type exists.
 */
export type ResourceType = 'project' | 'agent';

/** One plugin's table of an entity type: whether it holds the id in the company. */
export interface PluginEntityRows {
  plugin: string;
  holds(db: Queryable, companyId: string, id: string): Promise<boolean>;
}

export class ResourceDirectory {
  /** Installed by the extension host: the tables of the loaded plugins that declare this entity type. */
  pluginEntityRows: (type: string) => readonly PluginEntityRows[] = () => [];

  async exists(db: Queryable, type: ResourceType, companyId: string, resourceId: string): Promise<boolean> {
    if (type === 'agent') return !!(await db.maybeOne('select 1 from agents where id = ? and company_id = ?', [resourceId, companyId]));
    for (const rows of this.pluginEntityRows(type)) {
      if (await rows.holds(db, companyId, resourceId)) return true;
    }
    return false;
  }
}
