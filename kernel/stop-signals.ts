/**
 * How a stop is signalled to the server process. A service manager or a container runtime
 * sends SIGTERM to the whole process group, and `npm start` forwards the same signal to Keel
 * again, so one stop often arrives as two signals; a terminal that closes sends SIGHUP; Ctrl-C
 * sends SIGINT, and an impatient operator sends it twice. Every one of them means the same
 * thing: stop what this process started (plugin workers, agent processes, the embedded
 * PostgreSQL) in order, then exit. A repeated signal never exits at once, which would leave
 * PostgreSQL running: it only hurries the stop (requests in flight are cut off instead of
 * drained). Only SIGKILL ends Keel without stopping them, and the embedded PostgreSQL's
 * watchdog (db/postgres-watchdog.ts) covers that.
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = typeof STOP_SIGNALS[number];

export interface StopSignalHandlers {
  /** The first stop signal: begin the ordered stop. */
  stop(signal: StopSignal): void;
  /** Every later one, while the stop runs: hurry it, never skip it. */
  hurry(signal: StopSignal): void;
}

export function onStopSignals(handlers: StopSignalHandlers): void {
  let stopping = false;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      // Output to a terminal that has closed (SIGHUP) fails; that must not interrupt the stop.
      quietOutputErrors();
      if (stopping) {
        handlers.hurry(signal);
        return;
      }
      stopping = true;
      handlers.stop(signal);
    });
  }
}

let quieted = false;
function quietOutputErrors(): void {
  if (quieted) return;
  quieted = true;
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
}
