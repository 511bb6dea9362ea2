/** A usage or precondition error of the CLI itself; `issues` list what a local check found. */
export class CliError extends Error {
  readonly code: string;
  readonly issues?: Array<{ path: string; message: string }>;
  constructor(code: string, message: string, issues?: Array<{ path: string; message: string }>) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    if (issues) this.issues = issues;
  }
}
