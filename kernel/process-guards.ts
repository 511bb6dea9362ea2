import type { Logger } from 'pino';

/**
 * Last line of defence of the server process. Errors of a request are answered where they
 * arise (the request's own handlers, the error middleware, listeners on every stream a route
 * creates); anything that still escapes to the process is a bug, and it is logged here with
 * its stack instead of ending the process. The state worth keeping lives in PostgreSQL, whose
 * transactions roll back on their own, so serving the other requests on is the lesser harm
 * than a crash that any caller able to trigger the bug could repeat at will.
 */
export function installProcessGuards(log: Logger): void {
  process.on('uncaughtException', (error) => {
    log.error({ err: error }, 'uncaught exception; the server keeps running');
  });
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason }, 'unhandled promise rejection; the server keeps running');
  });
}
