import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import type { Row } from '../db/database.ts';
import type { PluginRoute } from './contributions/routes.ts';
import type { LogLine, PluginProcess } from './plugin-process.ts';
import type { DefaultActivity } from './protocol/messages.ts';

/**
 * A plugin this process runs, and the options of one call into it: plain types, kept apart from
 * the ExtensionHost so that what reads a plugin (the capabilities, the contribution points) need
 * not import the host.
 */
export interface LoadedPlugin {
  key: string;
  manifest: PluginManifest;
  folder: string;
  row: Row;
  process: PluginProcess | null;
  routes: PluginRoute[];
  logs: LogLine[];
}

export interface InvokeOptions {
  transactional: boolean;
  readOnly?: boolean;
  /** Group this call with concurrent calls of the same route into one commit (manifest `batch`). */
  batch?: { key: string; maxItems: number; maxInFlight: number };
  defaultActivity?: DefaultActivity | null;
  deadlineMs?: number;
}
