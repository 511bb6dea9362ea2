import type { Invocation } from '../invocation.ts';

/** A capability as the worker serves it: a method table; async methods return promises. */
export type CapabilityMethod = (invocation: Invocation, args: unknown[]) => unknown | Promise<unknown>;
export type WorkerCapability = Record<string, CapabilityMethod>;

/** An error that crosses into the isolate: a code and a message, never a host stack or path. */
export class CapabilityError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}
