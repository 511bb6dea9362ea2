import type { PluginManifest } from '../../../sdk/plugin/manifest.ts';
import type { RouteModule } from '../../http/app.ts';
import { notFound } from '../../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../../http/route-spec.ts';
import { queryValidator } from '../../http/validate.ts';
import { contributionsOf } from '../contributions/contribution-points.ts';
import { ENQUEUED_STATES } from '../contributions/enqueued-job-json.ts';
import { toJobRunJson } from '../contributions/job-runs.ts';
import type { ExtensionHost } from '../extension-host.ts';

const runsQuery = queryValidator<{ limit: number }>({
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
});

const queueQuery = queryValidator<{ limit: number; state?: string; jobKey?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
    state: { enum: ENQUEUED_STATES },
    jobKey: { type: 'string', maxLength: 64 },
  },
});

function jobOf(manifest: PluginManifest, pluginKey: string, jobKey: string) {
  const job = manifest.jobs?.find((j) => j.key === jobKey);
  if (!job) throw notFound(`Plugin ${pluginKey} has no job ${jobKey}`, 'job_not_found');
  return job;
}

/**
 * Scheduled jobs of a plugin (instance admin): the jobs with their schedule, whether the
 * schedule is registered with the job engine, the next occurrence and the last run; the
 * recent runs of one job; and a manual run, which answers 202 with the run record while the
 * job runs.
 */
export const pluginJobRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Plugin jobs');

  route({
    method: 'GET', path: '/api/plugins/:pluginId/jobs', auth: 'instance_admin', success: 200, response: LIST_RESPONSE,
    summary: "A plugin's jobs: schedule, next occurrence, last run",
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const { jobs } = contributionsOf(host);
    const [registered, latest] = await Promise.all([jobs.registeredSchedules(row.key), jobs.runs.latest(row.key)]);
    ctx.body = ((row.manifest as PluginManifest).jobs ?? []).map((job) => {
      const scheduled = job.schedule !== undefined && registered.has(job.key);
      const last = latest.get(job.key);
      return {
        key: job.key,
        pluginKey: row.key,
        description: job.description ?? null,
        schedule: job.schedule ?? null,
        scheduled,
        nextRunAt: scheduled ? jobs.nextRun(job.schedule!) : null,
        timeoutMs: job.timeoutMs ?? null,
        concurrency: job.concurrency ?? 1,
        lastRun: last ? toJobRunJson(last) : null,
      };
    });
  });

  route({
    method: 'GET', path: '/api/plugins/:pluginId/jobs/:jobId/runs', auth: 'instance_admin', query: runsQuery, success: 200, response: LIST_RESPONSE,
    summary: 'Recent runs of one job, newest first',
  }, async (ctx, req) => {
    const row = await host.row(ctx.params.pluginId!);
    const job = jobOf(row.manifest as PluginManifest, row.key, ctx.params.jobId!);
    const { limit } = req.query();
    const runs = await contributionsOf(host).jobs.runs.list(row.key, { jobKey: job.key, limit });
    ctx.body = runs.map(toJobRunJson);
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/jobs/:jobId/trigger', auth: 'instance_admin', success: 202,
    summary: 'Run a job now; answers with the run record while it runs',
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const job = jobOf(row.manifest as PluginManifest, row.key, ctx.params.jobId!);
    const run = await contributionsOf(host).jobs.trigger(row.key, job.key, async (tx, started) => {
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'plugin.job_triggered', entityType: 'plugin_job', entityId: `${row.key}.${job.key}`,
        details: { plugin: row.key, job: job.key, runId: started.id },
      });
    });
    ctx.status = 202;
    ctx.body = toJobRunJson(run);
  });

  // ---- enqueued jobs (ctx.jobs.enqueue) --------------------------------------------------

  route({
    method: 'GET', path: '/api/plugins/:pluginId/job-queue', auth: 'instance_admin', query: queueQuery, success: 200, response: LIST_RESPONSE,
    summary: "A plugin's enqueued jobs, newest first: state (queued, retrying, running, succeeded, cancelled, failed), company, progress and last run",
  }, async (ctx, req) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = await contributionsOf(host).enqueued.list(row.key, req.query());
  });

  route({
    method: 'GET', path: '/api/plugins/:pluginId/job-queue/:jobId', auth: 'instance_admin', success: 200,
    summary: 'One enqueued job, with the progress its running call reported',
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = await contributionsOf(host).enqueued.get(row.key, ctx.params.jobId!);
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/job-queue/:jobId/cancel', auth: 'instance_admin', success: 200,
    summary: 'Cancel an enqueued job: a queued one never runs; a running one is refused its next progress report and is not retried',
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const enqueued = contributionsOf(host).enqueued;
    const outcome = await enqueued.cancelByOperator(row.key, ctx.params.jobId!);
    if (outcome.cancelled) {
      await kernel.db.transaction((tx) => kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'plugin.job_cancelled', entityType: 'plugin_job', entityId: `${row.key}.${ctx.params.jobId}`,
        details: { plugin: row.key, jobId: ctx.params.jobId },
      }));
    }
    ctx.body = { ...outcome, job: await enqueued.get(row.key, ctx.params.jobId!) };
  });
};
