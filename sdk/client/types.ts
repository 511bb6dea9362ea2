/**
 * Shapes of the plugin API answers (`/api/plugins/*`) as the kernel sends them. The API is
 * alpha: these mirror kernel/host/plugin-json.ts and the plugin API routes.
 */
export interface PluginRecord {
  id: string;
  pluginKey: string;
  packageName: string | null;
  displayName: string;
  description: string | null;
  version: string;
  tag: 'example' | 'first-party' | null;
  experimental: boolean;
  /** Experimental instance settings the plugin's routes need on. */
  requiresExperimentalSettings: string[];
  sourceKind: 'first_party' | 'example' | 'local_path' | 'npm';
  localPath: string | null;
  status: 'installed' | 'enabled' | 'disabled' | 'failed';
  running: 'starting' | 'running' | 'restarting' | 'stopped' | 'failed';
  capabilities: Array<{ id: string; reason: string }>;
  grantedCapabilities: string[];
  firstGrantedAt: string | null;
  databaseNamespace: string | null;
  routes: Array<{ key: string; method: string; path: string; auth: string }>;
  tools: Array<{ key: string; description: string }>;
  jobs: Array<{ key: string; schedule: string | null }>;
  webhooks: Array<{ key: string; path: string; signed: boolean }>;
  lastError: string | null;
  installedAt: string | null;
  enabledAt: string | null;
  disabledAt: string | null;
  updatedAt: string | null;
}

export interface ExamplePlugin {
  packageName: string;
  pluginKey: string;
  displayName: string;
  description: string | null;
  localPath: string;
  tag: 'example';
  experimental: boolean;
  installed: boolean;
}

export interface PluginHealth {
  pluginKey: string;
  status: string;
  healthy: boolean;
  worker: { status: string; pid?: number | null; restarts?: number; inFlight?: number; lastBootMs?: number | null; [field: string]: unknown };
  lastError: string | null;
}

export interface PluginLogs { pluginKey: string; logs: Array<{ at: string; level: string; message: string; fields?: Record<string, unknown> }> }

export interface UiContributions {
  slots: Array<{ pluginKey: string; slot: string; key: string; label?: string; order: number; dataKey?: string }>;
  launchers: Array<{ pluginKey: string; key: string; label: string; placement: string; action?: string }>;
  pages: Array<{ pluginKey: string; key: string; title: string; path: string }>;
}

export interface PluginTool { key: string; pluginKey: string; name: string; description: string; inputSchema: Record<string, unknown> }

/** Where to install a plugin from: a folder on the kernel's machine, or a package name. */
export type InstallSource = { localPath: string } | { packageName: string };
