/**
 * An error a plugin throws on purpose: the host answers with `status` and `{error, code}`.
 * Any other thrown value becomes a 500 `plugin_error` without its stack.
 */
export class PluginError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.name = 'PluginError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}
