/**
 * A plugin call that failed, as the host reports it: an HTTP status, a stable code and a
 * message (a PluginError the plugin threw, a denied capability, a timeout, a bad input).
 */
export class PluginCallError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly issues?: Array<{ path: string | Array<string | number>; message: string }>;
  constructor(status: number, code: string, message: string, extra: { details?: unknown; issues?: Array<{ path: string | Array<string | number>; message: string }> } = {}) {
    super(message);
    this.name = 'PluginCallError';
    this.status = status;
    this.code = code;
    this.details = extra.details;
    this.issues = extra.issues;
  }
}

/**
 * An error a fake capability raises; it crosses into the isolate as `{status, code, message}`.
 * The same class the real worker's capabilities throw, so fakes fail exactly as they would.
 */
export { CapabilityError as CapabilityFault } from '../shared/capability-error.ts';
