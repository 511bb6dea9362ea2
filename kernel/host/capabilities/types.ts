import type { InvocationInfo } from '../../../sdk/plugin/context.ts';
import type { KernelServices } from '../../services.ts';
import type { ExtensionHost } from '../extension-host.ts';

/** What a kernel-served capability method receives: identity comes from the kernel's own record of the call. */
export interface BrokeredCall {
  plugin: string;
  grants: readonly string[];
  info: InvocationInfo;
  args: unknown[];
  kernel: KernelServices;
  host: ExtensionHost;
  /** How deep in a chain of service calls this call is (0 for a call a request started). */
  depth: number;
}

export type KernelCapabilityMethod = (call: BrokeredCall) => Promise<unknown>;
export interface KernelCapability { methods: Record<string, { needs: string[]; run: KernelCapabilityMethod }> }
