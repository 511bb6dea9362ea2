import { companiesPause as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { bridge, holdAnswer, reason } from '../../worker/capabilities/kernel-row-bridge.ts';
import type { WorkerCapability } from '../../worker/capabilities/types.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.companies.pause/resume` (companies.pause): this plugin's hold on the call's company, placed
 * or lifted in this call's transaction by keel_bridge.hold_company (bridge.sql), as agents.pause does.
 */
function companiesPause(db: PluginDatabase | null): WorkerCapability {
  const hold = (held: boolean) => async (invocation: Invocation, args: unknown[]) =>
    holdAnswer(await bridge(db, invocation, 'select keel_bridge.hold_company($1, $2, $3, $4) as result', [held, reason(args[0])]), 'Company');
  return { pause: hold(true), resume: hold(false) };
}

export const workerSide = workerUnit(spec, ({ database }) => ({ companies: companiesPause(database) }));
