import { KERNEL_POINT_REFUSAL_STATUSES, KERNEL_POINTS, type KernelPointName } from '../../../sdk/manifest/kernel-points.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../../sdk/manifest/plugin-schema-ajv.ts';
import { KeelError } from '../../http/errors.ts';
import type { PointScope } from '../../points/kernel-points.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import { askAsKernel, refusalDetails } from './kernel-invoke.ts';
import { appendPluginLog } from './plugin-log.ts';

/** The code of a refusal must look like the kernel's own codes; anything else is replaced. */
const REFUSAL_CODE = /^[a-z][a-z0-9_]{2,63}$/;

/**
 * Answers to kernel points (sdk/manifest/kernel-points.ts) from the plugins that declare them
 * under `kernelPoints`, granted `kernel.points` and `services.provide`. On activation each such
 * plugin is registered with the kernel's registry (kernel/points/kernel-points.ts); a disabled
 * plugin answers nothing and the kernel keeps what it was given.
 *
 * The call is the declared service, read-only (it cannot write: the kernel's change has not
 * happened yet and may still fail), in the request's company and with its actor, caller
 * `kernel`, bounded by the plugin's call deadline. The answer must match the point's output
 * schema. A refusal passes to the API caller as the plugin wrote it (status, code, message,
 * details, plus `details.plugin` and `details.point`) when its status is one of 400, 403, 404,
 * 409, 422 (a code not shaped like `[a-z][a-z0-9_]` becomes 422 `plugin_point_refused`); any other
 * failure (timeout, crash, a 5xx, an answer outside the schema) is 503 `plugin_point_failed`:
 * the kernel fails closed rather than store an unresolved value.
 */
export class PluginKernelPoints {
  private readonly host: ExtensionHost;
  private readonly registered = new Map<string, Array<() => void>>();

  constructor(host: ExtensionHost) {
    this.host = host;
  }

  activate(plugin: LoadedPlugin): void {
    this.deactivate(plugin.key);
    const grants: string[] = plugin.row.granted_capabilities ?? [];
    if (!grants.includes('kernel.points') || !grants.includes('services.provide')) return;
    const offs = (plugin.manifest.kernelPoints ?? [])
      .filter((declared) => declared.point in KERNEL_POINTS)
      .map((declared) => this.host.kernel.points.provide(declared.point as KernelPointName, plugin.key,
        (input, scope) => this.ask(plugin.key, declared.point as KernelPointName, declared.service, input, scope) as never, declared.adapterTypes ?? null));
    this.registered.set(plugin.key, offs);
  }

  deactivate(key: string): void {
    for (const off of this.registered.get(key) ?? []) off();
    this.registered.delete(key);
  }

  private async ask(key: string, point: KernelPointName, service: string, input: unknown, scope: PointScope): Promise<unknown> {
    const result = await askAsKernel(this.host, key, service, input, scope, { transactional: false, readOnly: true }, 503);
    const plugin = this.host.plugins.get(key);
    const name = plugin ? `${plugin.manifest.displayName} (${key})` : key;
    if (result.ok) {
      const issues = schemaIssues(pluginBodyAjv, KERNEL_POINTS[point].output, result.value, '(answer)');
      if (issues.length === 0) return result.value;
      return this.fail(plugin, name, point, `${describeIssues(`answer to ${point}`, issues)}`);
    }
    const { error } = result;
    if ((KERNEL_POINT_REFUSAL_STATUSES as readonly number[]).includes(error.status)) {
      const refusal = { details: refusalDetails(error.details, { plugin: key, point }), expose: true };
      // A code not shaped like the API's codes is not passed on: the refusal stands, as a 422 of the host's.
      if (!REFUSAL_CODE.test(error.code)) throw new KeelError(422, 'plugin_point_refused', error.message, refusal);
      throw new KeelError(error.status, error.code, error.message, refusal);
    }
    return this.fail(plugin, name, point, `${error.code}: ${error.message}`);
  }

  private fail(plugin: LoadedPlugin | undefined, name: string, point: string, reason: string): never {
    if (plugin) appendPluginLog(plugin, 'warn', `kernel point ${point} failed: ${reason}`, { point });
    throw new KeelError(503, 'plugin_point_failed', `${name} could not answer ${point}`, { details: { plugin: plugin?.key ?? null, point }, expose: true });
  }
}
