import { servicesConsume as spec } from '../../../../sdk/capabilities/services.ts';
import type { PluginManifest, ServiceManifest } from '../../../../sdk/plugin/manifest.ts';
import { KeelError, validationFailed } from '../../../http/errors.ts';
import type { LoadedPlugin } from '../../loaded-plugin.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../../../sdk/manifest/plugin-schema-ajv.ts';
import { IdempotentServiceCalls } from '../../service-calls.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const MAX_DEPTH = 4;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;


/**
 * Plugin-to-plugin services. The callee learns who calls (`invocation.caller.plugin`) and on
 * whose behalf (the same company, actor and run); the caller gains none of the callee's
 * powers, and must itself hold every capability the service lists under `callerRequires`.
 * The host checks the input against the service's `inputSchema` before the callee runs and
 * its result against `outputSchema` before the caller sees it.
 *
 * A service commits in the provider's own transaction, before the caller's: if the caller's
 * transaction then rolls back, what the service did stays. A caller that may be retried
 * passes an idempotency key (derived from its own request's, say): the first call with that
 * key runs the service and stores its result, and a retry gets the stored result without
 * running the service again (service-calls.ts).
 */
const servicesCapability: KernelCapability<'db' | 'points', 'invoke' | 'plugins'> = {
  methods: {
    call: {
      run: async (call: BrokeredCall<'db' | 'points', 'invoke' | 'plugins'>) => {
        const [provider, service, input, options] = call.args as [unknown, unknown, unknown, unknown];
        if (typeof provider !== 'string' || typeof service !== 'string') throw new KeelError(400, 'invalid_arguments', 'services.call(plugin, service, input, { idempotencyKey? })');
        const idempotencyKey = idempotencyKeyOf(options);
        const { callee, offered } = resolveService(call, provider, service);
        const payload = input ?? null;
        if (offered.inputSchema) {
          const issues = schemaIssues(pluginBodyAjv, offered.inputSchema, payload, '(input)');
          if (issues.length) throw validationFailed(describeIssues(`input of ${provider}.${service}`, issues), issues);
        }
        const run = () => invokeService(call, callee, offered, payload, idempotencyKey);
        if (!idempotencyKey) return run();
        return new IdempotentServiceCalls(call.kernel.db).once({
          provider, service, caller: call.plugin, companyId: call.info.companyId, idempotencyKey, input: payload,
          staleAfterMs: (callee.manifest.limits?.callTimeoutMs ?? 10_000) + 60_000,
        }, run);
      },
    },
    adapterContributor: {
      run: async (call: BrokeredCall<'db' | 'points', 'invoke' | 'plugins'>) => {
        const [adapterType] = call.args as [string];
        const owners = call.kernel.points.contributors('agent.adapter-config', adapterType);
        if (owners.length > 1) {
          throw new KeelError(409, 'adapter_type_contested', `Several plugins contribute the adapter type ${adapterType} (${owners.join(', ')}); an operator must disable all but one`, {
            details: { adapterType, plugins: owners }, expose: true,
          });
        }
        return { plugin: owners[0] ?? null };
      },
    },
  },
};

function idempotencyKeyOf(options: unknown): string | null {
  if (options === undefined || options === null) return null;
  if (typeof options !== 'object' || Array.isArray(options) || Object.keys(options).some((name) => name !== 'idempotencyKey')) {
    throw new KeelError(400, 'invalid_arguments', 'services.call options are { idempotencyKey?: string }');
  }
  const key = (options as { idempotencyKey?: unknown }).idempotencyKey;
  if (key === undefined) return null;
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) throw new KeelError(400, 'invalid_idempotency_key', 'idempotencyKey must be 1-255 printable ASCII characters without spaces');
  return key;
}

/** The declarations both sides must have made, each denial naming the one that is missing. */
function resolveService(call: BrokeredCall<'db' | 'points', 'invoke' | 'plugins'>, provider: string, service: string): { callee: LoadedPlugin; offered: ServiceManifest } {
  const caller = call.host.plugins.get(call.plugin)!;
  const consumes = caller.manifest.services?.consumes ?? [];
  const named = consumes.some((c) => c.plugin === provider && c.service === service);
  const contract = consumes.some((c) => c.contract === service);
  if (!named && !contract) {
    throw new KeelError(403, 'service_not_declared', `${call.plugin} does not declare services.consumes {plugin: "${provider}", service: "${service}"} (nor {contract: "${service}"})`);
  }
  const callee = call.host.plugins.get(provider);
  if (!callee) throw new KeelError(503, 'service_unavailable', `Plugin ${provider} is not enabled`, { expose: true });
  const offered = (callee.manifest as PluginManifest).services?.provides?.find((s) => s.key === service);
  if (!offered || !(callee.row.granted_capabilities ?? []).includes('services.provide')) throw new KeelError(404, 'service_not_found', `${provider} provides no service "${service}"`);
  // A contract reaches only a provider that declared it implements this caller's contract.
  if (!named && offered.contractOf !== call.plugin) {
    throw new KeelError(403, 'service_not_declared', `${provider}.${service} does not declare contractOf "${call.plugin}", and ${call.plugin} does not name it under services.consumes`);
  }
  const missing = (offered.callerRequires ?? []).filter((needed) => !call.grants.includes(needed));
  if (missing.length) throw new KeelError(403, 'service_caller_lacks_capability', `${provider}.${service} requires callers to hold ${missing.join(', ')}; ${call.plugin} does not`);
  if (call.depth >= MAX_DEPTH) throw new KeelError(508, 'service_call_depth', `Service calls nested deeper than ${MAX_DEPTH}`, { expose: true });
  return { callee, offered };
}

async function invokeService(call: BrokeredCall<'db' | 'points', 'invoke' | 'plugins'>, callee: LoadedPlugin, offered: ServiceManifest, input: unknown, idempotencyKey: string | null): Promise<unknown> {
  const { id: _id, kind: _kind, target: _target, ...rest } = call.info;
  const result = await call.host.invoke(callee.key, 'service', offered.key, input, { ...rest, caller: { plugin: call.plugin }, idempotencyKey }, offered.readOnly ? { transactional: false, readOnly: true } : { transactional: true }, call.depth + 1, call.info.id);
  // The provider's own error, as it chose to expose it; the caller may pass it on.
  if (!result.ok) throw new KeelError(result.error?.status ?? 502, result.error?.code ?? 'service_failed', result.error?.message ?? 'service failed', { expose: true });
  const value = result.value === undefined ? null : JSON.parse(result.value) as unknown;
  if (offered.outputSchema) {
    const issues = schemaIssues(pluginBodyAjv, offered.outputSchema, value, '(output)');
    if (issues.length) {
      throw new KeelError(502, 'service_output_invalid', `${describeIssues(`output of ${callee.key}.${offered.key}`, issues)}; the provider broke its declared outputSchema`, { issues, expose: true });
    }
  }
  return value;
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db', 'points'], host: ['invoke', 'plugins'] }, serves: { services: servicesCapability.methods } });
