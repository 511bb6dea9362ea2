import type { InvocationInfo } from '../../../sdk/plugin/context.ts';
import type { KernelServices } from '../../services.ts';
import type { CapabilityHost } from './capability-host.ts';

/** A kernel service a unit may declare it uses (`uses.kernel`). */
export type KernelNeed = keyof KernelServices;
/** A host service a unit may declare it uses (`uses.host`). */
export type HostNeed = keyof CapabilityHost;

/**
 * What a kernel-served capability method receives: identity comes from the kernel's own record
 * of the call. `kernel` and `host` hold only the services its unit declared (`uses` of
 * kernelUnit): the type checker refuses a handler that reaches for another, and the broker hands
 * it views without them (unit.ts). With no parameters it is the part every call has, which
 * helpers such as callCompany take.
 */
export interface BrokeredCall<K extends KernelNeed = never, H extends HostNeed = never> {
  plugin: string;
  grants: readonly string[];
  info: InvocationInfo;
  args: unknown[];
  kernel: Pick<KernelServices, K>;
  /** The host's services the unit declared (never the ExtensionHost itself). */
  host: Pick<CapabilityHost, H>;
  /** How deep in a chain of service calls this call is (0 for a call a request started). */
  depth: number;
}

export type KernelCapabilityMethod<K extends KernelNeed = never, H extends HostNeed = never> = (call: BrokeredCall<K, H>) => Promise<unknown>;
/**
 * The kernel's implementation of registry methods (sdk/capabilities declares who may call
 * them, their scope and their arguments; the broker checks that before `run`). `checkedAs`
 * marks a host-internal call the worker makes on a plugin's behalf: it is checked as that
 * registry method (`events.publish`).
 */
export interface KernelCapability<K extends KernelNeed = never, H extends HostNeed = never> { methods: Record<string, { run: KernelCapabilityMethod<K, H>; checkedAs?: string }> }

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
