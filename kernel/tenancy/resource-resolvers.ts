import type { Queryable } from '../db/database.ts';

/**
 * Answers whether a resource of some type exists in a company. The kernel knows agents;
 * other resource types (projects) belong to plugins, which register a resolver when they
 * are enabled and remove it when they are disabled. With no resolver for a type, no
 * resource of that type exists.
 */
export type ResourceType = 'project' | 'agent';
export type ResourceResolver = (db: Queryable, companyId: string, resourceId: string) => Promise<boolean>;

const resolvers = new Map<ResourceType, ResourceResolver>();

resolvers.set('agent', async (db, companyId, agentId) =>
  !!(await db.maybeOne('select 1 from agents where id = ? and company_id = ?', [agentId, companyId])));

/** Installs the resolver of a type, replacing any earlier one; returns a function that removes it again. */
export function registerResourceResolver(type: ResourceType, resolver: ResourceResolver): () => void {
  resolvers.set(type, resolver);
  return () => {
    if (resolvers.get(type) === resolver) resolvers.delete(type);
  };
}

export async function resourceExists(db: Queryable, type: ResourceType, companyId: string, resourceId: string): Promise<boolean> {
  const resolver = resolvers.get(type);
  return resolver ? resolver(db, companyId, resourceId) : false;
}
