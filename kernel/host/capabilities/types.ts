import type { InvocationInfo } from '../../../sdk/plugin/context.ts';
import type { KernelServices } from '../../services.ts';
import type { CapabilityHost } from './capability-host.ts';

/** What a kernel-served capability method receives: identity comes from the kernel's own record of the call. */
export interface BrokeredCall {
  plugin: string;
  grants: readonly string[];
  info: InvocationInfo;
  args: unknown[];
  kernel: KernelServices;
  /** The host's services a capability may use (never the ExtensionHost itself). */
  host: CapabilityHost;
  /** How deep in a chain of service calls this call is (0 for a call a request started). */
  depth: number;
}

export type KernelCapabilityMethod = (call: BrokeredCall) => Promise<unknown>;
/**
 * The kernel's implementation of registry methods (sdk/capabilities declares who may call
 * them, their scope and their arguments; the broker checks that before `run`). `checkedAs`
 * marks a host-internal call the worker makes on a plugin's behalf: it is checked as that
 * registry method (`events.publish`).
 */
export interface KernelCapability { methods: Record<string, { run: KernelCapabilityMethod; checkedAs?: string }> }

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
