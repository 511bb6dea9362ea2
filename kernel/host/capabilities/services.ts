import type { PluginManifest } from '../../../sdk/plugin/manifest.ts';
import { KeelError } from '../../http/errors.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { BrokeredCall, KernelCapability } from './types.ts';

const MAX_DEPTH = 4;

/**
 * Plugin-to-plugin services. The callee learns who calls (`invocation.caller.plugin`) and on
 * whose behalf (the same company, actor and run); the caller gains none of the callee's
 * powers, and must itself hold every capability the service lists under `callerRequires`.
 */
export const servicesCapability: KernelCapability = {
  methods: {
    call: {
      needs: ['services.consume'], scope: 'instance',
      run: async (raw: BrokeredCall) => {
        const call = raw as BrokeredCall & { host: ExtensionHost; depth: number };
        const [provider, service, input] = call.args as [unknown, unknown, unknown];
        if (typeof provider !== 'string' || typeof service !== 'string') throw new KeelError(400, 'invalid_arguments', 'services.call(plugin, service, input)');
        const caller = call.host.plugins.get(call.plugin)!;
        const declared = (caller.manifest.services?.consumes ?? []).some((c) => c.plugin === provider && c.service === service);
        if (!declared) throw new KeelError(403, 'service_not_declared', `${call.plugin} does not declare services.consumes {plugin: "${provider}", service: "${service}"}`);
        const callee = call.host.plugins.get(provider);
        if (!callee) throw new KeelError(503, 'service_unavailable', `Plugin ${provider} is not enabled`);
        const offered = (callee.manifest as PluginManifest).services?.provides?.find((s) => s.key === service);
        if (!offered || !(callee.row.granted_capabilities ?? []).includes('services.provide')) throw new KeelError(404, 'service_not_found', `${provider} provides no service "${service}"`);
        const missing = (offered.callerRequires ?? []).filter((needed) => !call.grants.includes(needed));
        if (missing.length) throw new KeelError(403, 'service_caller_lacks_capability', `${provider}.${service} requires callers to hold ${missing.join(', ')}; ${call.plugin} does not`);
        if (call.depth >= MAX_DEPTH) throw new KeelError(508, 'service_call_depth', `Service calls nested deeper than ${MAX_DEPTH}`);
        const { id: _id, kind: _kind, target: _target, ...rest } = call.info;
        const result = await call.host.invoke(provider, 'service', service, input ?? null, { ...rest, caller: { plugin: call.plugin } }, { transactional: true }, call.depth + 1);
        if (!result.ok) throw new KeelError(result.error?.status ?? 502, result.error?.code ?? 'service_failed', result.error?.message ?? 'service failed');
        return result.value === undefined ? null : JSON.parse(result.value);
      },
    },
  },
};
