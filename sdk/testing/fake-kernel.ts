import type { InvocationInfo } from '../plugin/context.ts';
import { allCapabilityMethods } from '../capabilities/index.ts';
import { CapabilityFault } from './errors.ts';

/**
 * The capability methods a test fakes, named `member.method`: every method of the registry
 * (sdk/capabilities) served by the kernel or by the database rather than in the worker.
 */
export type KernelMethod = string;

/** A fake receives the plugin's arguments and the invocation the host attached (company, actor, run). */
export type KernelFake = (args: unknown[], invocation: InvocationInfo) => unknown | Promise<unknown>;

const FAKEABLE = allCapabilityMethods().filter((found) => found.spec.servedBy !== 'worker');
export const KERNEL_METHODS: readonly KernelMethod[] = FAKEABLE.map((found) => `${found.member}.${found.method}`);

/**
 * Kernel capabilities (companies, agents, runs, secrets, services, streams) as injectable fakes:
 * `host.kernel.on('companies.get', ([id]) => ({ id, name: 'Acme' }))`. The registry's call
 * check (grant, company scope, arguments) runs before a fake, as the broker runs it; a granted method with no fake
 * fails with `fake_missing`, naming the call to add. Calls are recorded in `calls`.
 */
export class FakeKernel {
  readonly calls: Array<{ method: KernelMethod; args: unknown[]; invocation: InvocationInfo }> = [];
  private readonly fakes = new Map<string, KernelFake>();

  constructor(initial: Partial<Record<KernelMethod, KernelFake>> = {}) {
    for (const [method, fake] of Object.entries(initial)) if (fake) this.on(method as KernelMethod, fake);
  }

  on(method: KernelMethod, fake: KernelFake): this {
    if (!KERNEL_METHODS.includes(method)) throw new Error(`Unknown kernel capability method "${method}"; one of ${KERNEL_METHODS.join(', ')}`);
    this.fakes.set(method, fake);
    return this;
  }

  async call(method: KernelMethod, args: unknown[], invocation: InvocationInfo): Promise<unknown> {
    this.calls.push({ method, args, invocation });
    const fake = this.fakes.get(method);
    if (!fake) throw new CapabilityFault(501, 'fake_missing', `${method} has no test fake; add host.kernel.on('${method}', (args, invocation) => value)`);
    const value = await fake(args, invocation);
    return value === undefined ? null : value;
  }
}
