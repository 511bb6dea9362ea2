import { PgBoss, type Job } from 'pg-boss';
import type { Row, Tx } from '../../db/database.ts';
import { JobEngineDatabase } from '../../db/job-engine-database.ts';
import { conflict, KeelError, notFound } from '../../http/errors.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import { JobRuns, type JobTrigger } from './job-runs.ts';
import { appendPluginLog } from './plugin-log.ts';

/** The job engine's own schema; plugin roles get no privilege on it. */
export const JOB_ENGINE_SCHEMA = 'keel_jobs';
const DEFAULT_CALL_TIMEOUT_MS = 10_000;
/** Five fields (minute hour day-of-month month day-of-week); seconds fields and macros are refused. */
const FIVE_FIELDS = /^\S+(\s+\S+){4}$/;

interface OccurrenceData { jobKey: string }

/** One queue per plugin; each scheduled job is a schedule on it, keyed by the job key. */
export function queueOf(pluginKey: string): string {
  return `plugin/${pluginKey}`;
}

/** The deadline of one call of a job: its own `timeoutMs` (up to 15 minutes), else the plugin's call deadline. */
export function jobDeadlineOf(plugin: LoadedPlugin, jobKey?: string): number {
  const job = jobKey === undefined ? undefined : plugin.manifest.jobs?.find((j) => j.key === jobKey);
  return job?.timeoutMs ?? plugin.manifest.limits?.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
}

function deadlineOf(plugin: LoadedPlugin): number {
  // The queue's expiry covers the longest job of the plugin.
  return Math.max(jobDeadlineOf(plugin), ...(plugin.manifest.jobs ?? []).map((job) => jobDeadlineOf(plugin, job.key)));
}

function perCompany(plugin: LoadedPlugin, jobKey: string): boolean {
  return plugin.manifest.jobs?.find((job) => job.key === jobKey)?.perCompany === true;
}

/**
 * Scheduled plugin jobs. Schedules live in the database through pg-boss: its cron pass is
 * claimed by one kernel process at a time and files each occurrence under a per-minute
 * singleton slot, and workers fetch jobs with SKIP LOCKED, so kernels sharing one
 * PostgreSQL never run the same occurrence twice. A job run invokes the plugin and is
 * recorded in plugin_job_runs, whose `running` row is also the lease that keeps a job from
 * overlapping itself (see job-runs.ts).
 *
 * Schedules are registered when a plugin is activated and removed when it is deactivated
 * (disable, uninstall, upgrade); a kernel that is shutting down leaves them in place for the
 * other processes.
 */
export class PluginJobs {
  readonly runs: JobRuns;
  private readonly host: ExtensionHost;
  private readonly boss: PgBoss;
  private stopping = false;
  /** Runs started in this process and not finished yet (manual triggers run in the background). */
  private readonly inFlight = new Set<Promise<unknown>>();

  /** The job engine, shared with enqueued jobs (enqueued-jobs.ts): one engine, one schema. */
  get engine(): PgBoss {
    return this.boss;
  }

  private constructor(host: ExtensionHost, boss: PgBoss) {
    this.host = host;
    this.boss = boss;
    this.runs = new JobRuns(host.kernel.db);
  }

  /** Starts the engine; it creates or migrates its schema itself (under its own advisory lock). */
  static async start(host: ExtensionHost, databaseUrl: string): Promise<PluginJobs> {
    const log = host.kernel.log;
    const boss = new PgBoss({
      // Its connections follow the primary of a DATABASE_URL with a host list (job-engine-database.ts).
      // Two connections: its queues' pollers, started together, poll together every two seconds,
      // and four connections kept four PostgreSQL backends (15-23 MiB resident each) open for
      // polls of a few milliseconds that wait little for one another.
      db: new JobEngineDatabase(databaseUrl, { max: 2, applicationName: 'keel-jobs', log }),
      schema: JOB_ENGINE_SCHEMA,
      // A pass every 10 s keeps a job within seconds of its minute; the default is 30 s.
      cronMonitorIntervalSeconds: 10,
      cronWorkerIntervalSeconds: 2,
      // Workers of notify-enabled queues (plugins' enqueued work) are woken by NOTIFY when a job is
      // created, in every process, instead of waiting out their poll: a queued agent run starts at
      // once. Polling stays as the floor when the listener is down.
      useListenNotify: true,
    });
    boss.on('error', (error: Error) => log.warn({ err: error }, 'job engine error'));
    boss.on('warning', (warning: unknown) => log.warn({ warning }, 'job engine warning'));
    await boss.start();
    const jobs = new PluginJobs(host, boss);
    await jobs.removeOrphanedSchedules();
    return jobs;
  }

  // ---- activation hooks ------------------------------------------------------------------

  async activate(plugin: LoadedPlugin): Promise<void> {
    const declared = plugin.manifest.jobs ?? [];
    const granted = (plugin.row.granted_capabilities ?? []).includes('jobs.schedule');
    const queue = queueOf(plugin.key);
    if (!granted || declared.length === 0) {
      await this.clearSchedules(queue, new Set());
      return;
    }
    for (const job of declared) {
      if (job.schedule !== undefined && !FIVE_FIELDS.test(job.schedule.trim())) {
        throw new KeelError(422, 'invalid_job_schedule', `${plugin.key}: job ${job.key} has schedule "${job.schedule}"; a schedule is a cron expression of 5 fields, in UTC`);
      }
    }
    await this.boss.createQueue(queue, {
      retryLimit: 0,
      expireInSeconds: Math.ceil(deadlineOf(plugin) / 1000) + 60,
      // An occurrence nobody fetched within an hour (no process has the plugin running) is dropped.
      retentionSeconds: 3600,
      deleteAfterSeconds: 86_400,
    });
    const scheduled = new Set<string>();
    for (const job of declared) {
      if (job.schedule === undefined) continue;
      try {
        await this.boss.schedule(queue, job.schedule.trim(), { jobKey: job.key } satisfies OccurrenceData, { key: job.key, tz: 'UTC' });
      } catch (error) {
        throw new KeelError(422, 'invalid_job_schedule', `${plugin.key}: job ${job.key} has an invalid schedule "${job.schedule}": ${(error as Error).message}`);
      }
      scheduled.add(job.key);
    }
    // Jobs an upgrade removed or unscheduled lose their schedule.
    await this.clearSchedules(queue, scheduled);
    await this.boss.offWork(queue).catch(() => undefined);
    await this.boss.work<OccurrenceData>(queue, { pollingIntervalSeconds: 2, batchSize: 1 }, (occurrences) => this.onOccurrences(plugin.key, occurrences));
  }

  async deactivate(key: string): Promise<void> {
    if (this.stopping) return;
    const queue = queueOf(key);
    await this.boss.offWork(queue).catch(() => undefined);
    await this.clearSchedules(queue, new Set());
    // Occurrences filed before the schedule went must not run when the plugin comes back.
    await this.boss.deleteQueuedJobs(queue).catch(() => undefined);
  }

  private async clearSchedules(queue: string, keep: Set<string>): Promise<void> {
    for (const schedule of await this.boss.getSchedules(queue)) {
      if (!keep.has(schedule.key)) await this.boss.unschedule(queue, schedule.key);
    }
  }

  /** Schedules of plugins that are no longer enabled (a process stopped between disable and cleanup). */
  private async removeOrphanedSchedules(): Promise<void> {
    const enabled = new Set((await this.host.kernel.db.query<{ key: string }>("select key from plugins where status = 'enabled'")).map((r) => r.key));
    for (const schedule of await this.boss.getSchedules()) {
      const plugin = schedule.name.startsWith('plugin/') ? schedule.name.slice('plugin/'.length) : null;
      if (plugin !== null && !enabled.has(plugin)) await this.boss.unschedule(schedule.name, schedule.key);
    }
  }

  // ---- running jobs ----------------------------------------------------------------------

  private async onOccurrences(pluginKey: string, occurrences: Array<Job<OccurrenceData>>): Promise<void> {
    for (const occurrence of occurrences) {
      const plugin = this.host.plugins.get(pluginKey);
      const jobKey = occurrence.data?.jobKey;
      if (!plugin || typeof jobKey !== 'string' || !plugin.manifest.jobs?.some((j) => j.key === jobKey)) continue;
      const leaseMs = await this.leaseMs(plugin, jobKey);
      const run = await this.host.kernel.db.transaction((tx) => this.runs.acquire(tx, pluginKey, jobKey, 'schedule', leaseMs));
      if (!run) {
        appendPluginLog(plugin, 'warn', `job ${jobKey}: scheduled occurrence skipped, the previous run is still running`);
        continue;
      }
      const work = this.track(this.execute(plugin, jobKey, run));
      // A perCompany run may outlast the engine's expiry of the occurrence (one call per company):
      // the occurrence is done once the run holds its lease, which is what keeps runs from overlapping.
      if (!perCompany(plugin, jobKey)) await work;
    }
  }

  /**
   * A manual run: the run record is created (and the trigger audited) in the request's
   * transaction, then the job runs in this process in the background.
   */
  async trigger(pluginKey: string, jobKey: string, audit: (tx: Tx, run: Row) => Promise<void>): Promise<Row> {
    const plugin = this.host.plugins.get(pluginKey);
    if (!plugin?.process) throw conflict(`Plugin ${pluginKey} is not enabled`, undefined, 'plugin_not_enabled');
    if (!plugin.manifest.jobs?.some((j) => j.key === jobKey)) throw notFound(`Plugin ${pluginKey} has no job ${jobKey}`, 'job_not_found');
    const leaseMs = await this.leaseMs(plugin, jobKey);
    const run = await this.host.kernel.db.transaction(async (tx) => {
      const started = await this.runs.acquire(tx, pluginKey, jobKey, 'manual', leaseMs);
      if (!started) throw conflict(`Job ${jobKey} of ${pluginKey} is already running`, undefined, 'job_already_running');
      await audit(tx, started);
      return started;
    });
    void this.track(this.execute(plugin, jobKey, run));
    return run;
  }

  /**
   * Runs one occurrence. A job serves no company unless it is declared `perCompany`: then it is
   * invoked once per company that is not archived, one after another, each call serving that
   * company alone (its own transaction, activity and deadline). The run fails when any of them did.
   */
  private async execute(plugin: LoadedPlugin, jobKey: string, run: Row): Promise<void> {
    const companies = perCompany(plugin, jobKey) ? await this.companies() : [null];
    const failures: string[] = [];
    for (const companyId of companies) {
      const outcome = await this.invokeJob(plugin, jobKey, run, companyId);
      if (outcome.ok) continue;
      failures.push(companyId ? `company ${companyId}: ${outcome.error}` : outcome.error!);
      appendPluginLog(plugin, 'error', `job ${jobKey} failed${companyId ? ` for company ${companyId}` : ''}: ${outcome.error}`, { runId: run.id, trigger: run.trigger as JobTrigger, ...(companyId ? { companyId } : {}) });
      if (outcome.stop) break;
    }
    const error = failures.length === 0 ? null
      : companies.length > 1 ? `${failures.length} of ${companies.length} companies failed; ${failures.slice(0, 3).join('; ')}${failures.length > 3 ? '; ...' : ''}` : failures[0]!;
    await this.runs.finish(run.id, { ok: error === null, error }).catch((failure: Error) => this.host.kernel.log.error({ err: failure, runId: run.id }, 'could not record job run'));
  }

  private async invokeJob(plugin: LoadedPlugin, jobKey: string, run: Row, companyId: string | null): Promise<{ ok: boolean; error?: string; stop?: boolean }> {
    try {
      const result = await this.host.invoke(plugin.key, 'job', jobKey, null, {
        companyId, actor: { type: 'system', id: 'scheduler', agentId: null }, runId: null,
        job: { runId: run.id, jobId: null, attempt: 1 },
      }, {
        transactional: true,
        deadlineMs: jobDeadlineOf(plugin, jobKey),
        defaultActivity: { action: `plugin.${plugin.key}.job.${jobKey}`, entityType: 'plugin_job_run', entityId: run.id, onlyIfWritten: true },
      });
      return result.ok ? { ok: true } : { ok: false, error: `${result.error?.code ?? 'plugin_error'}: ${result.error?.message ?? 'failed'}` };
    } catch (error) {
      // The plugin went away (disabled, upgraded): the remaining companies would fail the same way.
      return { ok: false, error: `${(error as KeelError).code ?? 'host_error'}: ${(error as Error).message}`, stop: true };
    }
  }

  /** The companies a perCompany job serves: every one that is not archived. */
  private async companies(): Promise<string[]> {
    return (await this.host.kernel.db.query<{ id: string }>("select id from companies where status <> 'archived' order by created_at, id")).map((row) => row.id);
  }

  /** How long a run holds its lease: a perCompany run makes one call per company, one after another. */
  private async leaseMs(plugin: LoadedPlugin, jobKey: string): Promise<number> {
    if (!perCompany(plugin, jobKey)) return jobDeadlineOf(plugin, jobKey);
    const row = await this.host.kernel.db.maybeOne<{ n: number }>("select count(*)::int as n from companies where status <> 'archived'");
    return jobDeadlineOf(plugin, jobKey) * Math.max(1, row?.n ?? 1);
  }

  private track(work: Promise<unknown>): Promise<unknown> {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
    return work;
  }

  /** The next occurrence of a cron expression after now (UTC), or null. */
  nextRun(schedule: string): string | null {
    try {
      return this.boss.previewSchedule(schedule.trim(), { count: 1, tz: 'UTC' })[0]?.toISOString() ?? null;
    } catch {
      return null;
    }
  }

  /** Job keys with a schedule registered in the engine (the database, not this process). */
  async registeredSchedules(pluginKey: string): Promise<Set<string>> {
    return new Set((await this.boss.getSchedules(queueOf(pluginKey))).map((s) => s.key));
  }

  /** Stops fetching and waits for runs in flight; schedules stay for the other processes. */
  /** Up while the engine runs and reaches its schema; down once it stops or loses the database. */
  async health(): Promise<{ status: 'up' | 'down'; detail?: string }> {
    if (this.stopping) return { status: 'down', detail: 'stopped' };
    try {
      await this.boss.getDb().executeSql('select 1');
      return { status: 'up' };
    } catch {
      return { status: 'down', detail: 'cannot reach the database' };
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.boss.stop({ graceful: true, timeout: 5000, close: true }).catch((error: Error) => this.host.kernel.log.warn({ err: error }, 'job engine did not stop cleanly'));
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
  }
}
