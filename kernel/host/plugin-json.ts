import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { iso, type Row } from '../db/database.ts';
import type { LoadedPlugin } from './extension-host.ts';
import { pendingToolChanges } from './tool-approvals.ts';

/** The installed-plugin record as the API shows it. */
export function toPluginJson(row: Row, loaded?: LoadedPlugin): Record<string, unknown> {
  const manifest = row.manifest as PluginManifest;
  return {
    id: row.key,
    pluginKey: row.key,
    packageName: row.package_name ?? null,
    displayName: row.display_name,
    description: row.description ?? null,
    version: row.version,
    tag: row.tag ?? null,
    experimental: manifest.experimental ?? false,
    requiresExperimentalSettings: manifest.requiresExperimentalSettings ?? [],
    sourceKind: row.source_kind,
    localPath: row.source_kind === 'npm' ? null : row.source_path,
    status: row.status,
    running: loaded?.process?.health.status ?? 'stopped',
    capabilities: manifest.capabilities,
    grantedCapabilities: row.granted_capabilities ?? [],
    firstGrantedAt: iso(row.first_granted_at),
    databaseNamespace: row.db_namespace ?? null,
    routes: (manifest.routes ?? []).map((r) => ({ key: r.key, method: r.method, path: r.absolute ? r.path : `/api/plugins/${row.key}${r.path}`, auth: r.auth })),
    tools: (manifest.tools ?? []).map((t) => ({ key: `${row.key}.${t.key}`, description: t.description })),
    // New or changed since approved: withheld from agents (GET /api/plugins/{key}/tool-changes).
    pendingToolChanges: pendingToolChanges(row).map((change) => change.key),
    jobs: (manifest.jobs ?? []).map((j) => ({ key: j.key, schedule: j.schedule ?? null })),
    webhooks: (manifest.webhooks ?? []).map((w) => ({ key: w.key, path: `/api/plugins/${row.key}/webhooks/${w.key}`, signed: Boolean(w.signature) })),
    lastError: row.last_error ?? null,
    installedAt: iso(row.installed_at),
    enabledAt: iso(row.enabled_at),
    disabledAt: iso(row.disabled_at),
    updatedAt: iso(row.updated_at),
  };
}
