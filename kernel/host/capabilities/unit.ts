import type { CapabilitySpec } from '../../../sdk/capabilities/define.ts';
import type { KernelCapability } from './types.ts';

type Methods = KernelCapability['methods'];

/**
 * What the kernel process serves for one capability, registered against its SDK declaration
 * (the object exported by sdk/capabilities/*). The broker's method table, the grants of the
 * `keel_bridge` functions and the kernel-row grants are derived from these units
 * (capabilities/units.ts); nothing else names a capability's server.
 */
export interface KernelUnit {
  spec: CapabilitySpec;
  /** Handlers of the declaration's kernel-served methods, by `ctx` member, then method. */
  serves?: Record<string, Methods>;
  /**
   * Host-internal calls the worker makes while serving one of the declaration's database methods
   * (each `checkedAs` that method), by the internal member name the worker calls.
   */
  internal?: Record<string, Methods>;
  /** `keel_bridge` functions (SQL signatures) the plugin's runtime role may execute only with this capability granted. */
  bridgeFunctions?: readonly string[];
  /**
   * Its bridge functions write kernel rows this process caches (budgets, holds): a call granted
   * it ends with the cache probe after its commit (ExtensionHost.invoke).
   */
  writesKernelRows?: boolean;
}

export function kernelUnit(spec: CapabilitySpec, parts: Omit<KernelUnit, 'spec'>): KernelUnit {
  return { spec, ...parts };
}

/** The broker's table (member -> method -> handler), derived from the units; a method registered twice is an error at load. */
export function brokerTable(units: readonly KernelUnit[]): Record<string, KernelCapability> {
  const table: Record<string, KernelCapability> = {};
  for (const unit of units) {
    for (const part of [unit.serves, unit.internal]) {
      for (const [member, methods] of Object.entries(part ?? {})) {
        const served = (table[member] ??= { methods: {} });
        for (const [name, entry] of Object.entries(methods)) {
          if (Object.hasOwn(served.methods, name)) throw new Error(`${member}.${name} is served by two kernel units (the second: ${unit.spec.id})`);
          served.methods[name] = entry;
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
