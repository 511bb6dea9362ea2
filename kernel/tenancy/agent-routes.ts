import type { RouteModule } from '../http/app.ts';
import { agentConfigRoutes } from './agent-config-routes.ts';
import { agentCreateRoutes } from './agent-create-routes.ts';
import { agentKeyRoutes } from './agent-key-routes.ts';
import { agentLifecycleRoutes } from './agent-lifecycle-routes.ts';
import { agentReadRoutes } from './agent-read-routes.ts';
import { agentUpdateRoutes } from './agent-update-routes.ts';
import { grantRoutes } from './grant-routes.ts';
import { memberRoutes } from './member-routes.ts';

/**
 * Agents as principals: create and hire, read (me, one, list), update and permissions,
 * lifecycle, API keys, configuration history, and the company's permission grants and the
 * member users they may name.
 * agentReadRoutes goes first so that GET /api/agents/me precedes /api/agents/:agentId.
 */
export const agentRoutes: RouteModule = (router, kernel) => {
  agentReadRoutes(router, kernel);
  agentCreateRoutes(router, kernel);
  agentUpdateRoutes(router, kernel);
  agentLifecycleRoutes(router, kernel);
  agentKeyRoutes(router, kernel);
  agentConfigRoutes(router, kernel);
  grantRoutes(router, kernel);
  memberRoutes(router, kernel);
};
