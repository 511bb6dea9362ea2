import type { PluginManifest } from '../../../sdk/plugin/manifest.ts';
import { iso } from '../../db/database.ts';
import type { RouteModule } from '../../http/app.ts';
import { declareRoutes } from '../../http/route-spec.ts';
import { contributionsOf } from '../contributions/contribution-points.ts';
import { toJobRunJson } from '../contributions/job-runs.ts';
import type { ExtensionHost } from '../extension-host.ts';

const RECENT_RUNS = 10;
const RECENT_LOGS = 20;

/**
 * GET /api/plugins/{pluginId}/dashboard (instance admin): one payload for a plugin's settings
 * page: the record's basics, health (as /health answers it), recent job runs of every job,
 * recent log lines (newest first) and how much the plugin contributes.
 */
export const pluginDashboardRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Plugins');

  route({
    method: 'GET', path: '/api/plugins/:pluginId/dashboard', auth: 'instance_admin', success: 200,
    summary: "A plugin's settings page in one answer: record, health, recent job runs and logs, contribution counts",
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const manifest = row.manifest as PluginManifest;
    const loaded = host.plugins.get(row.key);
    const worker = loaded?.process?.health;
    const runs = await contributionsOf(host).jobs.runs.list(row.key, { limit: RECENT_RUNS });
    ctx.body = {
      plugin: {
        id: row.key,
        pluginKey: row.key,
        displayName: row.display_name,
        version: row.version,
        status: row.status,
        tag: row.tag ?? null,
        grantedCapabilities: row.granted_capabilities ?? [],
        enabledAt: iso(row.enabled_at),
        updatedAt: iso(row.updated_at),
      },
      health: {
        status: row.status,
        healthy: row.status === 'enabled' && worker?.status === 'running',
        worker: worker ?? { status: 'stopped' },
        lastError: row.last_error ?? null,
      },
      recentJobRuns: runs.map(toJobRunJson),
      recentLogs: (loaded?.logs ?? []).slice(-RECENT_LOGS).reverse(),
      counts: {
        routes: manifest.routes?.length ?? 0,
        tools: manifest.tools?.length ?? 0,
        jobs: manifest.jobs?.length ?? 0,
        webhooks: manifest.webhooks?.length ?? 0,
        events: manifest.events?.length ?? 0,
      },
    };
  });
};
