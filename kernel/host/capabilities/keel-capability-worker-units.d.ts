/**
 * The virtual module the worker's build makes (worker-units-module.ts): every capability
 * folder's worker.ts module, with its folder's name. What a module exports is checked when the
 * worker loads it (worker-units.ts, unit-check.ts), hence `unknown`.
 */
declare module 'keel:capability-worker-units' {
  export const WORKER_UNIT_MODULES: ReadonlyArray<{ readonly folder: string; readonly module: { readonly [name: string]: unknown } }>;
}
