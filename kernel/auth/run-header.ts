import { forbidden } from '../http/errors.ts';
import { canAccessCompany } from '../http/guards.ts';
import { isUuid } from '../http/validate.ts';
import type { Actor } from './actor.ts';

/** The ledger's answer for a run id: its agent and company while it is live, else undefined. */
export type LiveRunLookup = (runId: string) => Promise<{ agentId: string; companyId: string } | undefined>;

/**
 * Attaches the `X-Service-Run-Id` header to the resolved actor, as the spec asks, once the run
 * ledger confirms the caller may speak for that run. This is the only place a header run id
 * enters the actor, so every use of `actor.runId` (activity entries, plugin invocations and
 * through them checkout, release, comments and cost attribution) inherits the check.
 *
 * - An agent names only a live run of its own (same agent, same company). An agent JWT bound
 *   to a run names that run already: a header naming any other run is refused, not preferred.
 * - A board actor names only a live run of a company it can reach (the local board and
 *   instance admins: any): the board drives runs, it is none itself.
 * - A value that is not a uuid names no run and is ignored (the documented behaviour: nothing
 *   carries it); an unauthenticated request carries no run id, so it costs no lookup.
 *
 * Refusal is 403 `run_not_owned` with one message whatever the cause, so the answer does not
 * tell an unknown run from another company's or another agent's.
 */
export async function attachRunHeader(actor: Actor, header: string, liveRun: LiveRunLookup): Promise<Actor> {
  if (!isUuid(header) || actor.kind === 'anonymous') return actor;
  const runId = header.toLowerCase();
  if (actor.kind === 'agent' && actor.runId !== undefined) {
    if (actor.runId === runId) return actor;
    throw runNotOwned();
  }
  const run = await liveRun(runId);
  const owned = run !== undefined && canAccessCompany(actor, run.companyId) && (actor.kind !== 'agent' || run.agentId === actor.agentId);
  if (!owned) throw runNotOwned();
  return { ...actor, runId };
}

function runNotOwned() {
  return forbidden('X-Service-Run-Id does not name a live run this caller may act for', 'run_not_owned');
}
