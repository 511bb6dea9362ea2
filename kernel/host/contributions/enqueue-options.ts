import type { JobManifest } from '../../../sdk/plugin/manifest.ts';
import { KeelError } from '../../http/errors.ts';

/** Bounds of ctx.jobs.enqueue (docs/plugins/jobs.md). */
export const ENQUEUE_LIMITS = {
  payloadBytes: 64 * 1024,
  perCall: 100,
  /** Queued (not yet running) jobs of one plugin in one company. */
  queuedPerCompany: 1000,
  runAtMaxDays: 30,
  retryLimitMax: 10,
} as const;
/** Retries of a job whose manifest entry names none. */
export const DEFAULT_RETRY_LIMIT = 2;
/** A singleton key: 1-255 visible ASCII characters. */
const SINGLETON_KEY = /^[\x21-\x7e]{1,255}$/;

/** The options of one ctx.jobs.enqueue call, checked: when it may run, its singleton key and its retries (the job's declared default). */
export function enqueueOptions(options: unknown, job: JobManifest): { runAt: Date | null; singletonKey: string | null; retryLimit: number } {
  const usage = 'jobs.enqueue options are { runAt?: ISO time, singletonKey?: string, retryLimit?: integer }';
  const retryDefault = job.retryLimit ?? DEFAULT_RETRY_LIMIT;
  if (options === undefined || options === null) return { runAt: null, singletonKey: null, retryLimit: retryDefault };
  if (typeof options !== 'object' || Array.isArray(options) || Object.keys(options).some((name) => !['runAt', 'singletonKey', 'retryLimit'].includes(name))) {
    throw new KeelError(400, 'invalid_arguments', usage);
  }
  const { runAt, singletonKey, retryLimit } = options as { runAt?: unknown; singletonKey?: unknown; retryLimit?: unknown };
  let at: Date | null = null;
  if (runAt !== undefined && runAt !== null) {
    at = typeof runAt === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(runAt) ? new Date(runAt) : new Date(Number.NaN);
    if (Number.isNaN(at.getTime())) throw new KeelError(400, 'invalid_arguments', `runAt must be an ISO 8601 time; ${usage}`);
    if (at.getTime() > Date.now() + ENQUEUE_LIMITS.runAtMaxDays * 86_400_000) throw new KeelError(400, 'invalid_arguments', `runAt is at most ${ENQUEUE_LIMITS.runAtMaxDays} days ahead`);
  }
  if (singletonKey !== undefined && singletonKey !== null && (typeof singletonKey !== 'string' || !SINGLETON_KEY.test(singletonKey))) {
    throw new KeelError(400, 'invalid_arguments', 'singletonKey must be 1-255 visible ASCII characters');
  }
  if (retryLimit !== undefined && retryLimit !== null && (!Number.isInteger(retryLimit) || (retryLimit as number) < 0 || (retryLimit as number) > ENQUEUE_LIMITS.retryLimitMax)) {
    throw new KeelError(400, 'invalid_arguments', `retryLimit must be an integer from 0 to ${ENQUEUE_LIMITS.retryLimitMax}`);
  }
  return { runAt: at, singletonKey: (singletonKey as string | undefined) ?? null, retryLimit: (retryLimit as number | undefined) ?? retryDefault };
}
