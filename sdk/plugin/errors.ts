/** One problem of a refused input, as the kernel's own validation errors list them. */
export interface PluginValidationIssue { path: string | Array<string | number>; message: string }

/**
 * An error a plugin throws on purpose: the host answers with `status` and `{error, code}`,
 * plus `details` and a top-level `issues` list (a validation error's problems, the same place
 * the kernel's own validation errors put them) when given.
 * Any other thrown value becomes a 500 `plugin_error` without its stack.
 */
export class PluginError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly issues?: PluginValidationIssue[];
  constructor(status: number, code: string, message: string, details?: unknown, options: { issues?: PluginValidationIssue[] } = {}) {
    super(message);
    this.name = 'PluginError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.issues = options.issues;
  }
}
