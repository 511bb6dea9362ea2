import type { InvocationInfo } from '../plugin/context.ts';
import { CapabilityFault } from './errors.ts';

/** The kernel-served capability methods a test can fake, named `capability.method`. */
export type KernelMethod =
  | 'companies.get'
  | 'agents.get' | 'agents.list' | 'agents.pause' | 'agents.resume'
  | 'runs.open' | 'runs.close'
  | 'secrets.resolveEnvironment'
  | 'services.call'
  | 'streams.publish'
  | 'budgets.reportMonthlySpend' | 'budgets.setMonthlyBudget'
  | 'scopes.pauseAgent' | 'scopes.resumeAgent' | 'scopes.pauseCompany' | 'scopes.resumeCompany'
  | 'blobs.get' | 'blobs.readText' | 'blobs.createText' | 'blobs.link' | 'blobs.delete';

/** A fake receives the plugin's arguments and the invocation the host attached (company, actor, run). */
export type KernelFake = (args: unknown[], invocation: InvocationInfo) => unknown | Promise<unknown>;

export const KERNEL_METHODS: readonly KernelMethod[] = [
  'companies.get', 'agents.get', 'agents.list', 'agents.pause', 'agents.resume', 'runs.open', 'runs.close', 'secrets.resolveEnvironment', 'services.call', 'streams.publish',
  'budgets.reportMonthlySpend', 'budgets.setMonthlyBudget', 'scopes.pauseAgent', 'scopes.resumeAgent', 'scopes.pauseCompany', 'scopes.resumeCompany',
  'blobs.get', 'blobs.readText', 'blobs.createText', 'blobs.link', 'blobs.delete',
];

/** Methods that reach company data: the host refuses them to a call that serves no company. */
const COMPANY_SCOPED = (method: KernelMethod) => !method.startsWith('services.') && !method.startsWith('streams.');

/**
 * Kernel capabilities (companies, agents, runs, secrets, services, streams) as injectable fakes:
 * `host.kernel.on('companies.get', ([id]) => ({ id, name: 'Acme' }))`. The grant check
 * happens before a fake runs, exactly as the broker checks it; a granted method with no fake
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
    if (COMPANY_SCOPED(method) && !invocation.companyId) {
      throw new CapabilityFault(403, 'company_scope_required', `${method} reaches company data, and this call serves no company; declare the job perCompany: true in plugin.json to run it once per company, or serve the route under a company (companyParam or agentParam)`);
    }
    const fake = this.fakes.get(method);
    if (!fake) throw new CapabilityFault(501, 'fake_missing', `${method} has no test fake; add host.kernel.on('${method}', (args, invocation) => value)`);
    const value = await fake(args, invocation);
    return value === undefined ? null : value;
  }
}
