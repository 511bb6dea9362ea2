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
/**
 * `scope: 'company'`: the method reaches company data, so it runs only for a call that serves a
 * company (the broker refuses it otherwise with company_scope_required).
 */
export interface KernelCapability { methods: Record<string, { needs: string[]; scope: 'company' | 'instance'; run: KernelCapabilityMethod }> }

/**
 * A capability answer that delivers secret values: the worker is told which (never the
 * isolate), and keeps them out of everything the plugin sends out (worker/delivered-secrets.ts).
 */
export class DeliversSecrets {
  readonly value: unknown;
  readonly secrets: string[];
  constructor(value: unknown, secrets: string[]) {
    this.value = value;
    this.secrets = secrets;
  }
}
