import type { Invocation } from '../invocation.ts';

/** A capability as the worker serves it: a method table; async methods return promises. */
export type CapabilityMethod = (invocation: Invocation, args: unknown[]) => unknown | Promise<unknown>;
export type WorkerCapability = Record<string, CapabilityMethod>;
/** Asks the kernel over IPC (the broker checks the invocation and the grant there). */
export type KernelCall = (invocation: Invocation, capability: string, method: string, args: unknown[]) => Promise<unknown>;

export { CapabilityError } from '../../../../sdk/shared/capability-error.ts';
