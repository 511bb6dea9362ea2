import type { RouteModule } from './http/app.ts';
import type { ExtensionHost } from './host/extension-host.ts';
import { healthRoutes } from './http/health-routes.ts';
import { sessionRoutes } from './auth/session-routes.ts';
import { cliAuthRoutes } from './auth/cli-auth-routes.ts';
import { instanceRoutes } from './tenancy/instance-routes.ts';
import { llmsRoutes } from './tenancy/llms-routes.ts';
import { companyRoutes } from './tenancy/company-routes.ts';
import { portabilityRoutes } from './portability/portability-routes.ts';
import { assetRoutes } from './tenancy/asset-routes.ts';
import { uploadLimitRoutes } from './blobs/upload-limit-routes.ts';
import { agentRoutes } from './tenancy/agent-routes.ts';
import { approvalRoutes } from './tenancy/approval-routes.ts';
import { resourceMembershipRoutes } from './tenancy/resource-membership-routes.ts';
import { activityRoutes } from './activity/activity-routes.ts';
import { secretRoutes } from './vault/secret-routes.ts';
import { agentSecretRoutes } from './vault/agent-secret-routes.ts';
import { pluginApiRoutes } from './host/plugin-api-routes.ts';
import { pluginJobRoutes } from './host/api/job-routes.ts';
import { pluginEventRoutes } from './host/api/event-routes.ts';
import { pluginWebhookRoutes } from './host/api/webhook-routes.ts';
import { pluginDashboardRoutes } from './host/api/dashboard-routes.ts';
import { pluginUiRoutes } from './host/api/ui-routes.ts';
import { localFolderRoutes } from './host/api/local-folder-routes.ts';
import { openApiRoutes } from './host/api/openapi-routes.ts';
import { mcpRoutes } from './mcp/mcp-routes.ts';
import type { SelfRequest } from './mcp/self-request.ts';

/**
 * Every route module the server mounts, in registration order. Within a module, specific
 * paths are registered before parameterised ones (`/api/companies/stats` before
 * `/:companyId`). The core's modules know nothing of plugins; the extension host's modules
 * (the plugin API, jobs, webhooks, UI calls, folders, the OpenAPI document) are handed the
 * host here, where the server is put together.
 */
export function routeModules(host: ExtensionHost, self: SelfRequest): RouteModule[] {
  return [
    healthRoutes,
    openApiRoutes(host),
    sessionRoutes,
    cliAuthRoutes,
    instanceRoutes,
    llmsRoutes,
    portabilityRoutes,
    companyRoutes,
    assetRoutes,
    uploadLimitRoutes,
    secretRoutes,
    agentSecretRoutes,
    agentRoutes,
    approvalRoutes,
    resourceMembershipRoutes,
    activityRoutes,
    pluginJobRoutes(host),
    pluginEventRoutes(host),
    pluginWebhookRoutes(host),
    pluginDashboardRoutes(host),
    pluginUiRoutes(host),
    localFolderRoutes(host),
    pluginApiRoutes(host),
    mcpRoutes(host, self),
  ];
}
