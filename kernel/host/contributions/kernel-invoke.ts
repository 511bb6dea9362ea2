import { invocationCaller, type Actor } from '../../auth/actor.ts';
import { KeelError } from '../../http/errors.ts';
import type { ExtensionHost, InvokeOptions } from '../extension-host.ts';

/** The caller a plugin sees when the kernel itself asks one of its services (a kernel point, a portability part): a key no plugin can take, so those services can refuse anyone else. */
const KERNEL_CALLER = { plugin: 'kernel' };

export type KernelAsk =
  | { ok: true; value: unknown }
  | { ok: false; error: { status: number; code: string; message: string; details?: unknown } };

/**
 * The kernel asks a plugin's service on behalf of the actor of a request: the call carries that
 * actor and company, the caller `kernel`, and a host that could not even make the call (the
 * plugin is gone, its process died) answers `unavailableStatus` as a failed ask rather than a
 * throw, so each asker decides in one place what a failure means to its own caller.
 */
export async function askAsKernel(host: ExtensionHost, key: string, service: string, input: unknown, scope: { companyId: string; actor: Actor }, options: InvokeOptions, unavailableStatus: number): Promise<KernelAsk> {
  try {
    const result = await host.invoke(key, 'service', service, input, { companyId: scope.companyId, ...invocationCaller(scope.actor), caller: KERNEL_CALLER }, options);
    if (result.ok) return { ok: true, value: result.value === undefined ? null : JSON.parse(result.value) as unknown };
    return { ok: false, error: result.error! };
  } catch (error) {
    return { ok: false, error: { status: unavailableStatus, code: (error as KeelError).code ?? 'host_error', message: (error as Error).message } };
  }
}

/** A plugin's refusal details, as an object, with where it came from added. */
export function refusalDetails(details: unknown, origin: Record<string, unknown>): Record<string, unknown> {
  const own = typeof details === 'object' && details !== null && !Array.isArray(details) ? details as Record<string, unknown> : {};
  return { ...own, ...origin };
}
