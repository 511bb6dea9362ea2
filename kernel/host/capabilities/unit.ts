import type { CapabilitySpec } from '../../../sdk/capabilities/define.ts';
import type { CapabilityHost } from './capability-host.ts';
import type { BrokeredCall, HostNeed, KernelCapability, KernelNeed } from './types.ts';

type Methods<K extends KernelNeed = KernelNeed, H extends HostNeed = HostNeed> = KernelCapability<K, H>['methods'];
/** The kernel and host services a unit's handlers use; they get these and nothing else. */
export interface Uses<K extends KernelNeed, H extends HostNeed> { kernel?: readonly K[]; host?: readonly H[] }

/**
 * What the kernel process serves for one capability, registered against its SDK declaration
 * (the object exported by sdk/capabilities/*). The broker's method table, the grants of the
 * `keel_bridge` functions and the kernel-row grants are derived from these units
 * (capabilities/units.ts, which loads every capability folder's kernel.ts); nothing else names a
 * capability's server.
 */
export interface KernelUnit<K extends KernelNeed = KernelNeed, H extends HostNeed = HostNeed> {
  spec: CapabilitySpec;
  uses: Uses<K, H>;
  /** Handlers of the declaration's kernel-served methods, by `ctx` member, then method. */
  serves?: Record<string, Methods<K, H>>;
  /**
   * Host-internal calls the worker makes while serving one of the declaration's database methods
   * (each `checkedAs` that method), by the internal member name the worker calls.
   */
  internal?: Record<string, Methods<K, H>>;
  /** `keel_bridge` functions (SQL signatures) the plugin's runtime role may execute only with this capability granted. */
  bridgeFunctions?: readonly string[];
  /**
   * Its bridge functions write kernel rows this process caches (budgets, holds): a call granted
   * it ends with the cache probe after its commit (ExtensionHost.invoke).
   */
  writesKernelRows?: boolean;
}

/** The units kernelUnit() made: what a capability folder's kernel.ts exports is checked to be one at load (units.ts). */
const made = new WeakSet<object>();

/**
 * A unit of the declaration `spec`. Its handlers' types are checked against `uses` (inferred
 * from it alone): a handler that needs a service the unit does not declare does not compile.
 */
export function kernelUnit<K extends KernelNeed = never, H extends HostNeed = never>(
  spec: CapabilitySpec,
  parts: { uses?: Uses<K, H>; serves?: Record<string, NoInfer<Methods<K, H>>>; internal?: Record<string, NoInfer<Methods<K, H>>>; bridgeFunctions?: readonly string[]; writesKernelRows?: boolean },
): KernelUnit<K, H> {
  const unit: KernelUnit<K, H> = { spec, ...parts, uses: parts.uses ?? {} };
  made.add(unit);
  return unit;
}

export function isKernelUnit(value: unknown): value is KernelUnit {
  return typeof value === 'object' && value !== null && made.has(value);
}

/**
 * The call as a unit's handlers get it: `kernel` and `host` hold only the services the unit
 * declared, so what the type checker allows is what is there at run time. The views are made
 * once per services object and unit.
 */
function narrowing(uses: Uses<KernelNeed, HostNeed>): (call: BrokeredCall<KernelNeed, HostNeed>) => BrokeredCall<KernelNeed, HostNeed> {
  const kernels = new WeakMap<object, object>();
  const hosts = new WeakMap<object, object>();
  const view = <T extends object>(cache: WeakMap<object, object>, whole: T, names: readonly (keyof T)[]): T => {
    let made = cache.get(whole);
    if (!made) {
      made = Object.freeze(Object.defineProperties({}, Object.fromEntries(names.map((name) => [name, {
        enumerable: true,
        // Read at each use: the host's members (its plugin map, its invocations) are live.
        get: () => { const value = whole[name]; return typeof value === 'function' ? value.bind(whole) : value; },
      }]))));
      cache.set(whole, made);
    }
    return made as T;
  };
  return (call) => ({
    ...call,
    kernel: view(kernels, call.kernel, uses.kernel ?? []),
    host: view<CapabilityHost>(hosts, call.host as CapabilityHost, uses.host ?? []),
  });
}

/** The broker's table (member -> method -> handler), derived from the units; a method registered twice is an error at load. */
export function brokerTable(units: readonly KernelUnit[]): Record<string, KernelCapability<KernelNeed, HostNeed>> {
  const table: Record<string, KernelCapability<KernelNeed, HostNeed>> = {};
  for (const unit of units) {
    const narrow = narrowing(unit.uses);
    for (const part of [unit.serves, unit.internal]) {
      for (const [member, methods] of Object.entries(part ?? {})) {
        const served = (table[member] ??= { methods: {} });
        for (const [name, entry] of Object.entries(methods)) {
          if (Object.hasOwn(served.methods, name)) throw new Error(`${member}.${name} is served by two kernel units (the second: ${unit.spec.id})`);
          served.methods[name] = { ...entry, run: (call) => entry.run(narrow(call)) };
        }
      }
    }
  }
  return table;
}

/** Each bridge function with the capability that grants it. */
export function bridgeGrants(units: readonly KernelUnit[]): Array<[signature: string, grant: string]> {
  return units.flatMap((unit) => (unit.bridgeFunctions ?? []).map((signature): [string, string] => [signature, unit.spec.id]));
}

export function kernelRowGrants(units: readonly KernelUnit[]): string[] {
  return units.filter((unit) => unit.writesKernelRows).map((unit) => unit.spec.id);
}
