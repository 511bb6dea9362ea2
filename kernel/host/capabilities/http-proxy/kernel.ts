import { httpProxy as spec } from '../../../../sdk/capabilities/http.ts';
import { proxyTargetVerdict } from '../../../gateway/proxy-target.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * The kernel-served part of `ctx.http` (capability http.proxy): whether a model provider address
 * passes the rule the kernel applies when it forwards a proxy answer (kernel/gateway/proxy-target.ts).
 */
const httpProxyCapability: KernelCapability<'config'> = {
  methods: {
    checkProxyTarget: { run: async (call) => proxyTargetVerdict(call.args[0] as string, call.kernel.config) },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['config'] }, serves: { http: httpProxyCapability.methods } });
