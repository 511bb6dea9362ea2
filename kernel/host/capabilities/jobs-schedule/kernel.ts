import { jobsSchedule as spec } from '../../../../sdk/capabilities/jobs.ts';
import { KeelError } from '../../../http/errors.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const MAX_MESSAGE = 500;

function progressOf(value: unknown): { done: number; total: number | null; message: string | null } {
  const usage = 'progress.report({ done, total?, message? }): done and total are non-negative integers, message at most 500 characters';
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).some((k) => !['done', 'total', 'message'].includes(k))) {
    throw new KeelError(400, 'invalid_arguments', usage);
  }
  const { done, total, message } = value as { done?: unknown; total?: unknown; message?: unknown };
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  if (!count(done) || (total !== undefined && total !== null && !count(total)) || (message !== undefined && message !== null && (typeof message !== 'string' || message.length > MAX_MESSAGE))) {
    throw new KeelError(400, 'invalid_arguments', usage);
  }
  return { done: done as number, total: (total as number | undefined) ?? null, message: (message as string | undefined) ?? null };
}

/**
 * `ctx.progress.report` (jobs.schedule or jobs.enqueue): the progress of a job's run, kept on the
 * run (plugin_job_runs) where operators read it through the job routes. The run is the one the
 * kernel started for this call; the plugin cannot name another. Calls that are not jobs have no
 * run: the report is accepted and not recorded (`recorded: false`). A report from a run whose
 * enqueued job was cancelled is refused with 409 job_cancelled, so the handler stops and its
 * transaction rolls back.
 */
const progressCapability: KernelCapability<never, 'contributionPoints'> = {
  methods: {
    report: {
      run: async (call) => {
        const progress = progressOf(call.args[0]);
        const job = call.info.job;
        if (!job) return { recorded: false };
        const points = call.host.contributionPoints();
        if (job.jobId && await points.enqueued.cancelled(call.plugin, job.jobId)) {
          throw new KeelError(409, 'job_cancelled', `Job ${job.jobId} was cancelled; stop and let this error through (the run's transaction rolls back)`);
        }
        return { recorded: await points.jobs.runs.reportProgress(call.plugin, job.runId, progress) };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { host: ['contributionPoints'] }, serves: { progress: progressCapability.methods } });
