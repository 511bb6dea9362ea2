import { KeelError } from '../../http/errors.ts';
import type { PartExport, PartImportInput, PartImportResult, PartScope } from '../../portability/parts.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import { askAsKernel, refusalDetails } from './kernel-invoke.ts';
import { appendPluginLog } from './plugin-log.ts';

/** A package part may take a while to read or write (10^4 issues): two minutes, the longest a call may last. */
const PART_DEADLINE_MS = 120_000;
const REFUSAL_STATUSES = [400, 403, 404, 409, 413, 422];
const CODE = /^[a-z][a-z0-9_]{2,63}$/;

/**
 * Company packages' plugin parts (kernel/portability/parts.ts) from the plugins that declare
 * `portability` in their manifest, granted `company.portability` and `services.provide`.
 * Export and import previews are read-only calls; an import's apply is a transactional call
 * (the plugin's part commits or rolls back as a whole), in the request's company and with its
 * actor. A refusal with a 4xx status reaches the API caller as the plugin wrote it (plus
 * `details.plugin`); anything else is 502 `portability_part_failed`.
 */
export class PluginPortabilityParts {
  private readonly host: ExtensionHost;
  private readonly registered = new Map<string, () => void>();

  constructor(host: ExtensionHost) {
    this.host = host;
  }

  activate(plugin: LoadedPlugin): void {
    this.deactivate(plugin.key);
    const grants: string[] = plugin.row.granted_capabilities ?? [];
    const declared = plugin.manifest.portability;
    if (!declared || !grants.includes('company.portability') || !grants.includes('services.provide')) return;
    const off = this.host.kernel.portability.provide({
      owner: plugin.key,
      after: declared.after ?? [],
      exportPart: async (scope) => this.call(plugin.key, declared.exportService, {}, scope, false) as Promise<PartExport>,
      importPart: async (input: PartImportInput, scope) => this.call(plugin.key, declared.importService, input, scope, input.mode === 'apply') as Promise<PartImportResult>,
    });
    this.registered.set(plugin.key, off);
  }

  deactivate(key: string): void {
    this.registered.get(key)?.();
    this.registered.delete(key);
  }

  private async call(key: string, service: string, input: unknown, scope: PartScope, writes: boolean): Promise<unknown> {
    const result = await askAsKernel(this.host, key, service, input, scope,
      writes ? { transactional: true, deadlineMs: PART_DEADLINE_MS } : { transactional: false, readOnly: true, deadlineMs: PART_DEADLINE_MS }, 502);
    if (result.ok) {
      const { value } = result;
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value;
      return this.fail(key, `${service} answered ${JSON.stringify(value)?.slice(0, 100)}, not an object`);
    }
    const { error } = result;
    if (REFUSAL_STATUSES.includes(error.status) && CODE.test(error.code)) {
      throw new KeelError(error.status, error.code, error.message, { details: refusalDetails(error.details, { plugin: key }), expose: true });
    }
    return this.fail(key, `${service}: ${error.code}: ${error.message}`);
  }

  private fail(key: string, reason: string): never {
    const plugin = this.host.plugins.get(key);
    if (plugin) appendPluginLog(plugin, 'warn', `company portability part failed: ${reason}`, {});
    throw new KeelError(502, 'portability_part_failed', `The ${key} plugin could not export or import its part of the company package`, { details: { plugin: key }, expose: true });
  }
}
