import { agentsPause as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { bridge, holdAnswer, reason, uuid } from '../../worker/capabilities/kernel-row-bridge.ts';
import type { WorkerCapability } from '../../worker/capabilities/types.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * Pauses as holds (migration 0020): `ctx.agents.pause/resume` (agents.pause) place or lift this
 * plugin's hold on an agent of the call's company in this call's transaction. keel_bridge.hold_agent
 * (bridge.sql) writes the hold, the status, the activity entry and the status event together, so
 * they commit or roll back with the plugin's own writes.
 */
function agentsPause(db: PluginDatabase | null): WorkerCapability {
  const hold = (held: boolean) => async (invocation: Invocation, args: unknown[]) =>
    holdAnswer(await bridge(db, invocation, 'select keel_bridge.hold_agent($1, $2, $3::uuid, $4, $5) as result', [uuid(args[0], 'agentId'), held, reason(args[1])]), 'Agent');
  return { pause: hold(true), resume: hold(false) };
}

export const workerSide = workerUnit(spec, ({ database }) => ({ agents: agentsPause(database) }));
