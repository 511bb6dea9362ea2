import { jobsEnqueue as spec } from '../../../../sdk/capabilities/jobs.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import type { KernelCall } from '../../worker/capabilities/types.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/** What the kernel answers an enqueue it has checked: the job already queued, or a signed ticket to stage. */
type CheckedEnqueue = { jobId: string; duplicate: true } | { jobId: string; duplicate: false; ticket: string; signature: string };

/**
 * `ctx.jobs` (jobs.enqueue). The kernel checks an enqueue (the job is declared, its payload
 * matches, the call's limits hold) and answers a ticket it signed for this invocation; the job
 * is then staged in the call's own transaction through `keel_bridge.stage_job`, which checks the
 * ticket again. So the job exists exactly when the call's writes commit; the kernel moves it to
 * the job engine after the commit (contributions/enqueued-jobs.ts). A cancel first takes back a
 * job this very call staged, which only its transaction can see.
 */
export function jobsCapability(db: PluginDatabase | null, kernel: KernelCall): WorkerCapability {
  return {
    enqueue: async (invocation, args) => {
      const signed = invocation.message.signed;
      if (!db || !signed || invocation.message.readOnly || !invocation.message.transactional) {
        throw new CapabilityError(403, 'jobs_need_transaction', 'jobs can be enqueued only from a mutating, transactional call (a job is stored with the call\'s writes and queued when they commit); this call is read-only or runs without a transaction');
      }
      const checked = await kernel(invocation, 'jobChecks', 'enqueue', args) as CheckedEnqueue;
      if (checked.duplicate) return { jobId: checked.jobId, duplicate: true };
      const client = await db.transactionOf(invocation)!;
      await db.statement(client, () => client.query({
        text: 'select keel_bridge.stage_job($1, $2, $3, $4)',
        values: [signed.invocation, signed.signature, checked.ticket, checked.signature],
      }));
      return { jobId: checked.jobId, duplicate: false };
    },
    cancel: async (invocation, args) => {
      const jobId = args[0];
      const signed = invocation.message.signed;
      if (db && signed && typeof jobId === 'string' && /^[0-9a-f-]{36}$/i.test(jobId) && invocation.message.transactional && !invocation.message.readOnly) {
        const client = await db.transactionOf(invocation)!;
        const result = await db.statement(client, () => client.query({ text: 'select keel_bridge.unstage_job($1, $2, $3::uuid) as unstaged', values: [signed.invocation, signed.signature, jobId] }));
        if ((result.rows[0] as { unstaged: boolean }).unstaged) return { cancelled: true, state: 'cancelled' };
      }
      return kernel(invocation, 'jobChecks', 'cancel', args);
    },
  };
}

export const workerSide = workerUnit(spec, ({ database, kernel }) => ({ jobs: jobsCapability(database, kernel) }));
