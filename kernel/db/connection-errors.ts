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
    // Already read as such (a plugin worker's answer, DATABASE_UNAVAILABLE below).
    if (code === 'database_unavailable') return true;
    // 08P01 (protocol violation) is the request's doing, a NUL sent as a parameter say: not an outage.
    if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || (code.startsWith('08') && code !== '08P01'))) return true;
    // A Unix socket whose server is stopped is gone: connecting to it finds no file (a missing file elsewhere is not an outage).
    if (code === 'ENOENT' && (current as { syscall?: unknown }).syscall === 'connect') return true;
    const message = (current as { message?: unknown }).message;
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
  }
  return false;
}

/**
 * True when a transaction failed because another one conflicted with it: a deadlock it lost
 * (40P01) or a serialization failure (40001). Nothing of it was committed and the same request,
 * sent again, normally goes through: the server answers 503 with Retry-After, not 500.
 */
export function isTransactionConflict(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === '40P01' || code === '40001') return true;
  }
  return false;
}

/** The answer to a call that met an unreachable database (the kernel's and a plugin worker's alike): 503, retry. */
export const DATABASE_UNAVAILABLE = { status: 503, code: 'database_unavailable', message: 'The database is unavailable; retry shortly' } as const;

/**
 * Runs `work` again while it fails because the database is unreachable (a failover, a restart),
 * with a growing pause, for at most `budgetMs`; any other failure, or the last one, is thrown.
 * For work that must be recorded once the database is back and has no client to retry it (the
 * end of an execution). `work` must be safe to repeat: a commit whose answer was lost may have
 * happened.
 */
export async function retryWhileDatabaseUnavailable<T>(work: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let pause = 200; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await work();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
