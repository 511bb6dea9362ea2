import type { Invocation } from '../../worker/invocation.ts';
import { onInvocationClient } from '../../worker/capabilities/activity-entity-kinds.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';

/**
 * Confirms the ledger runs this call opened (`ctx.runs.open`), inside the call's own
 * transaction just before its COMMIT: a run is confirmed exactly when the call's writes commit.
 * A run left unconfirmed (the call failed, or its Keel process died between the kernel's commit
 * of the open and this one) is closed by the kernel (runs-of-failed-calls.ts beside this file).
 */
export async function confirmOpenedRuns(db: PluginDatabase, invocation: Invocation): Promise<void> {
  const signed = invocation.message.signed;
  if (!invocation.openedRuns || !signed) return;
  await onInvocationClient(db, invocation, (client) => client.query({ text: 'select keel_bridge.confirm_opened_runs($1, $2)', values: [signed.invocation, signed.signature] }));
}
