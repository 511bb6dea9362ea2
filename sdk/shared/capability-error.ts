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
