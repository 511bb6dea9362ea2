/**
 * The one error type of the kernel. `code` is stable and documented in the error catalog
 * (docs/errors.md, kept in step by test/kernel/error-catalog.test.ts); `expose` decides
 * whether the message reaches the client. Unexposed errors answer with a generic 500 body
 * and never leak a stack trace.
 */
export class KeelError extends Error {
  readonly status: number;
  readonly code: string;
  readonly expose: boolean;
  readonly details?: unknown;
  readonly issues?: ValidationIssue[];
  readonly extra?: Record<string, unknown>;

  constructor(status: number, code: string, message: string, options: { details?: unknown; issues?: ValidationIssue[]; expose?: boolean; extra?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KeelError';
    this.status = status;
    this.code = code;
    this.expose = options.expose ?? status < 500;
    this.details = options.details;
    this.issues = options.issues;
    this.extra = options.extra;
  }
}

export interface ValidationIssue {
  /** A dotted path (the kernel's own), or a list of keys and indexes (a plugin may answer either). */
  path: string | Array<string | number>;
  message: string;
  keyword?: string;
}

export const badRequest = (message: string, details?: unknown) => new KeelError(400, 'bad_request', message, { details });
export const validationFailed = (message: string, issues: ValidationIssue[]) => new KeelError(400, 'validation_failed', message, { issues });
export const unauthorized = (message = 'Authentication required') => new KeelError(401, 'unauthorized', message);
export const forbidden = (message = 'Forbidden', code = 'forbidden', details?: unknown) => new KeelError(403, code, message, { details });
export const notFound = (message = 'Not found', code = 'not_found') => new KeelError(404, code, message);
export const conflict = (message: string, details?: unknown, code = 'conflict') => new KeelError(409, code, message, { details });
export const unprocessable = (message: string, details?: unknown, code = 'unprocessable') => new KeelError(422, code, message, { details });
export const payloadTooLarge = (limit: number) => new KeelError(413, 'payload_too_large', `Request body exceeds the limit of ${limit} bytes`);
export const unsupportedMediaType = (expected: string) => new KeelError(415, 'unsupported_media_type', `Content-Type must be ${expected}`);

/** The JSON error body every route answers with: `{error, code?, details?, issues?}`. */
export function errorBody(error: KeelError): Record<string, unknown> {
  const body: Record<string, unknown> = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (error.issues !== undefined) body.issues = error.issues;
  if (error.extra) Object.assign(body, error.extra);
  return body;
}
