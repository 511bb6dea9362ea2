import { defineCapability, method, present } from './define.ts';
import type { FolderChanges } from './folders.ts';
import { anything, text } from './schemas.ts';

/**
 * One job of a plugin as the plugin.gen.ts that `keel plugin build` writes from plugin.json
 * declares it: `payload` is what `ctx.jobs.enqueue(key, payload)` takes (the type of the job's
 * `payloadSchema`, or null for a job without one); `onChange` is set for the job a folder's
 * `onChange` names, which the host runs with the folder's changes.
 */
export interface JobDeclaration { payload: unknown; onChange?: FolderChanges }
/** A plugin's jobs by key (the `Jobs` of its plugin.gen.ts). */
export type JobDeclarations = Record<string, JobDeclaration>;
/** The jobs of code typed without its manifest: any key, any payload. */
export type UntypedJobs = Record<string, { payload: unknown }>;
/**
 * What the handler of a job receives: the payload it was enqueued with, the folder's changes for
 * a folder's `onChange` job, or null for a scheduled run and an operator's trigger (any job can be
 * triggered, whatever its payloadSchema).
 */
export type JobPayloadOf<Job extends JobDeclaration> = Job['payload'] | (Job extends { onChange: infer Changes } ? Changes : never) | null;

/** The arguments after the key: a job without a payloadSchema takes no payload (null). */
type EnqueueArguments<Payload> = null extends Payload
  ? [payload?: Payload, options?: EnqueueOptions]
  : [payload: Payload, options?: EnqueueOptions];

/** Options of `ctx.jobs.enqueue`. */
export interface EnqueueOptions {
  /** When to run it: an ISO 8601 time, at most 30 days ahead (default: now). */
  runAt?: string;
  /**
   * At most one queued or running job of this job key with this key, in the call's company: a
   * second enqueue answers the first one's id with `duplicate: true`. 1-255 visible ASCII.
   */
  singletonKey?: string;
  /** Retries of a failed run, with exponential backoff (default: the job's `retryLimit`, else 2; at most 10). */
  retryLimit?: number;
}
/**
 * Work enqueued at run time (jobs.enqueue), run later by the host as a call of the job `key`
 * declared in plugin.json, in the company of the call that enqueued it. The job is stored in this
 * call's own transaction: it is queued when the call's writes commit (a crash after the commit
 * loses nothing) and not at all if they roll back. Only a mutating, transactional call may enqueue.
 */
export interface JobsCapability<Jobs extends JobDeclarations = UntypedJobs> {
  /**
   * Answers the job's id. At most 100 enqueues per call and 64 KiB of JSON payload each. In a
   * plugin typed from its plugin.json (`Context` of its plugin.gen.ts), `key` is one of its jobs
   * and `payload` has the type of that job's payloadSchema (which the kernel checks the payload
   * against); a job without a payloadSchema takes none.
   */
  enqueue<Key extends keyof Jobs & string>(key: Key, ...rest: EnqueueArguments<Jobs[Key]['payload']>): Promise<{ jobId: string; duplicate: boolean }>;
  /** Cancels a queued or running job this plugin enqueued in the call's company; a running one stops at its next progress report. */
  cancel(jobId: string): Promise<{ cancelled: boolean; state: string }>;
}
/**
 * Progress of a long call, shown to operators on the job run (GET /api/plugins/{key}/job-queue/{jobId}
 * and the job's runs). Rejects with 409 `job_cancelled` once the enqueued job was cancelled: a handler
 * that lets it through rolls back and stops.
 */
export interface ProgressCapability {
  report(progress: { done: number; total?: number; message?: string }): Promise<{ recorded: boolean }>;
}


const progressReport = method('kernel', [{ type: 'object', required: ['done'], properties: { done: { type: 'number' }, total: { type: 'number' }, message: { type: 'string' } } }], { type: 'object', required: ['recorded'] }, { scope: 'instance' });

export const jobsSchedule = defineCapability<{ progress: ProgressCapability }>()({
  id: 'jobs.schedule',
  summary: 'Run scheduled jobs, reporting their progress',
  members: { progress: { report: progressReport } },
  requiredBy: (manifest) => present(manifest, 'jobs'),
  satisfiedAlsoBy: ['jobs.enqueue'],
});

export const jobsEnqueue = defineCapability<{ jobs: JobsCapability; progress: ProgressCapability }>()({
  id: 'jobs.enqueue',
  summary: 'Queue work at run time, to run later as one of its declared jobs in the same company',
  members: {
    jobs: {
      enqueue: method('database', [text(64), anything, { type: 'object' }], { type: 'object', required: ['jobId', 'duplicate'] }, { required: 1, scope: 'instance' }),
      cancel: method('database', [text(100)], { type: 'object', required: ['cancelled', 'state'] }, { scope: 'instance' }),
    },
    progress: { report: progressReport },
  },
});
