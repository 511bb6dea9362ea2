import { KeelError } from '../http/errors.ts';
import type { SlotReport } from './protocol/messages.ts';
import { checkCapabilityCall } from '../../sdk/capabilities/check-call.ts';
import type { CapabilityHost } from './capabilities/capability-host.ts';
import type { HostNeed, KernelCapability, KernelNeed } from './capabilities/types.ts';
import { brokerTable } from './capabilities/unit.ts';
import { KERNEL_UNITS } from './capabilities/units.ts';
import type { ExtensionHost } from './extension-host.ts';

/**
 * Member -> method -> handler, derived from the registered units (capabilities/units.ts) on
 * first use: the units' modules import types of the host, so this is not read while modules load.
 */
let derivedTable: Record<string, KernelCapability<KernelNeed, HostNeed>> | undefined;
const kernelCapabilities = (): Record<string, KernelCapability<KernelNeed, HostNeed>> => (derivedTable ??= brokerTable(KERNEL_UNITS));

/**
 * The one place where plugin power is decided for kernel-served capabilities. A call is
 * accepted only for an invocation the kernel itself started for that plugin, and only with a
 * capability the operator granted; identity is taken from the kernel's record of the
 * invocation. Every denial is logged with the grant that would allow it.
 */
export class Broker {
  private readonly host: ExtensionHost;
  /** The host's services a capability may use (each handler gets only those its unit declares, unit.ts), never the host itself. */
  private readonly services: CapabilityHost;

  constructor(host: ExtensionHost) {
    this.host = host;
    this.services = {
      get plugins() { return host.plugins; },
      get invocations() { return host.invocations; },
      get afterInvoke() { return host.afterInvoke; },
      get streams() { return host.streams; },
      invoke: (...args) => host.invoke(...args),
      contributionPoints: () => host.contributionPoints(),
    };
  }

  async handle(plugin: string, call: Extract<SlotReport, { t: 'call' }>): Promise<unknown> {
    const invocation = this.host.invocations.get(call.invocationId);
    if (!invocation || invocation.plugin !== plugin) {
      throw new KeelError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
    }
    // Own properties only: prototype names (`constructor`, `toString`) are not capabilities or methods.
    const table = kernelCapabilities();
    const capability = Object.hasOwn(table, call.capability) ? table[call.capability] : undefined;
    const method = capability && Object.hasOwn(capability.methods, call.method) ? capability.methods[call.method] : undefined;
    if (!method) throw new KeelError(400, 'unknown_capability', `Unknown capability ${call.capability}.${call.method}`);
    if (JSON.stringify(call.args ?? null).length > 1_000_000) throw new KeelError(400, 'invalid_arguments', 'Arguments must be a JSON array under 1 MB');
    const loaded = this.host.plugins.get(plugin);
    const grants: string[] = loaded?.row.granted_capabilities ?? [];
    // The same check the worker made (sdk/capabilities): the worker is not trusted to have made it.
    const [member, name] = (method.checkedAs ?? `${call.capability}.${call.method}`).split('.') as [string, string];
    const checked = checkCapabilityCall({ plugin, grants, member, method: name, args: method.checkedAs ? [] : call.args, companyId: invocation.info.companyId, argumentsChecked: Boolean(method.checkedAs) });
    if ('refusal' in checked) {
      const { status, code, message } = checked.refusal;
      if (code === 'capability_denied') {
        this.host.kernel.log.warn({ plugin, capability: call.capability, method: call.method }, 'capability denied');
        loaded?.logs.push({ at: new Date().toISOString(), level: 'warn', message });
      }
      throw new KeelError(status, code, message);
    }
    return method.run({ plugin, grants, info: invocation.info, args: call.args, kernel: this.host.kernel, host: this.services, depth: invocation.depth });
  }
}
