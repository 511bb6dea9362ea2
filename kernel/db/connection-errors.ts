/** Socket errors of a connection to PostgreSQL that is refused, reset or timed out. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND']);
/** SQLSTATEs of a server that is shutting down, starting up or dropped the connection. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03']);
/** node-postgres reports a lost connection with a plain Error and one of these messages. */
const LOST_CONNECTION = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * True when an error means "the database cannot be reached right now" rather than "this
 * statement failed": the request may be retried and the server answers 503, not 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    // 08P01 (protocol violation) is the request's doing, a NUL sent as a parameter say: not an outage.
    if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || (code.startsWith('08') && code !== '08P01'))) return true;
    const message = (current as { message?: unknown }).message;
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
  }
  return false;
}

/** The answer to a call that met an unreachable database (the kernel's and a plugin worker's alike): 503, retry. */
export const DATABASE_UNAVAILABLE = { status: 503, code: 'database_unavailable', message: 'The database is unavailable; retry shortly' } as const;
