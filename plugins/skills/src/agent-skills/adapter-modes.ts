/**
 * How an adapter receives an agent's skills (the spec's adapter sync modes):
 * - persistent: the process and local adapters keep a working directory between runs, and the
 *   skills stay there;
 * - ephemeral: the skills are materialised into each run and removed after it (alpha_local mounts
 *   them per run);
 * - unsupported: the assignment is recorded but nothing can be pushed (gateway and http adapters,
 *   and adapter types this plugin does not know).
 */
export type SyncMode = 'persistent' | 'ephemeral' | 'unsupported';

const PERSISTENT = new Set(['process', 'beta_local', 'gamma_local', 'delta_local', 'pi_local', 'eta_local', 'cursor']);
const EPHEMERAL = new Set(['alpha_local']);

export function syncModeOf(adapterType: string): SyncMode {
  if (PERSISTENT.has(adapterType)) return 'persistent';
  if (EPHEMERAL.has(adapterType)) return 'ephemeral';
  return 'unsupported';
}
