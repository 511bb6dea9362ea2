import type { InvocationInfo } from '../../../sdk/plugin/context.ts';
import type { InvokeOptions, LoadedPlugin } from '../loaded-plugin.ts';
import type { InvokeResult } from '../plugin-process.ts';
import type { StreamScope } from '../stream-hub.ts';

/**
 * The host's services a kernel-served capability may use: the plugins this process runs, the
 * kernel's record of open invocations, service calls into another plugin, plugin streams and the
 * contribution points of jobs. A view the broker builds of the ExtensionHost, of which each
 * call gets only the members its unit declared (`uses.host`): a handler cannot reach the host's
 * lifecycle, signing or worker processes, and the capabilities do not import the host.
 */
export interface CapabilityHost {
  readonly plugins: ReadonlyMap<string, LoadedPlugin>;
  readonly invocations: ReadonlyMap<string, { signedUntil: number | null }>;
  /** Work to do when an invocation has ended (closing the runs a failed call left open). */
  readonly afterInvoke: Array<(invocationId: string, result: InvokeResult | null) => Promise<InvokeResult | null>>;
  readonly streams: { publish(plugin: string, scope: StreamScope, channel: string, data: unknown): Promise<void> };
  invoke(key: string, kind: InvocationInfo['kind'], target: string, input: unknown, info: Omit<InvocationInfo, 'id' | 'kind' | 'target'>, options: InvokeOptions, depth?: number, callerId?: string): Promise<InvokeResult>;
  /** The contribution points a capability reaches: enqueued jobs (`ctx.jobs`) and job runs (`ctx.progress`). */
  contributionPoints(): CapabilityContributions;
}

export interface CapabilityContributions {
  enqueued: {
    check(plugin: LoadedPlugin, invocationId: string, companyId: string | null, args: unknown[]): Promise<{ jobId: string; duplicate: true } | { jobId: string; duplicate: false; ticket: string; signature: string }>;
    cancel(plugin: LoadedPlugin, invocationId: string, companyId: string | null, jobId: unknown): Promise<{ cancelled: boolean; state: string }>;
    cancelled(pluginKey: string, jobId: string): Promise<boolean>;
  };
  jobs: { runs: { reportProgress(pluginKey: string, runId: string, progress: { done: number; total: number | null; message: string | null }): Promise<boolean> } };
}
