import { proxyTargetVerdict } from '../../gateway/proxy-target.ts';
import type { KernelCapability } from './types.ts';

/**
 * The kernel-served part of `ctx.http` (capability http.proxy): whether a model provider address
 * passes the rule the kernel applies when it forwards a proxy answer (kernel/gateway/proxy-target.ts).
 */
export const httpProxyCapability: KernelCapability = {
  methods: {
    checkProxyTarget: { run: async (call) => proxyTargetVerdict(call.args[0] as string, call.kernel.config) },
  },
};
