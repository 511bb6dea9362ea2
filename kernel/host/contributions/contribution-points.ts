import { KeelError } from '../../http/errors.ts';
import type { ExtensionHost } from '../extension-host.ts';
import { EnqueuedJobs } from './enqueued-jobs.ts';
import { EVENTS_CHANNEL, PluginEvents } from './events.ts';
import { PluginJobs } from './jobs.ts';
import { PluginKernelPoints } from './kernel-points.ts';
import { PluginPortabilityParts } from './portability-parts.ts';
import { UnconfirmedRunSweep } from '../capabilities/runs-open/runs-of-failed-calls.ts';

/** The contribution points that hook into plugin activation: scheduled jobs and kernel events. */
export interface ContributionPoints {
  jobs: PluginJobs;
  /** Jobs plugins enqueue at run time, on the same engine. */
  enqueued: EnqueuedJobs;
  events: PluginEvents;
  /** Closes runs whose opening call never committed (a process that died between the two commits). */
  unconfirmedRuns: UnconfirmedRunSweep;
  stop(): Promise<void>;
}

const started = new WeakMap<ExtensionHost, ContributionPoints>();

/**
 * Starts the job engine and the event bridge and registers their activation hooks. Runs
 * before the host activates the enabled plugins, so their schedules and subscriptions are
 * in place when the first request arrives. `stop` runs before the host stops its plugins:
 * the engine stops fetching (schedules stay for other processes) and subscriptions go.
 */
export async function startContributionPoints(host: ExtensionHost, options: { databaseUrl: string }): Promise<ContributionPoints> {
  const jobs = await PluginJobs.start(host, options.databaseUrl);
  const events = new PluginEvents(host);
  const enqueued = new EnqueuedJobs(host, jobs.engine, jobs.runs);
  host.onActivation(jobs);
  host.onActivation(enqueued);
  enqueued.start();
  const unconfirmedRuns = new UnconfirmedRunSweep(host.kernel);
  unconfirmedRuns.start();
  host.onActivation(events);
  const kernelPoints = new PluginKernelPoints(host);
  host.onActivation(kernelPoints);
  host.onActivation(new PluginPortabilityParts(host));
  host.onNotify(EVENTS_CHANNEL, () => events.wake());
  host.kernel.health.register('jobs', () => jobs.health(), { readiness: true });
  const points: ContributionPoints = {
    jobs,
    enqueued,
    events,
    unconfirmedRuns,
    async stop() {
      enqueued.stop();
      unconfirmedRuns.stop();
      await Promise.all([jobs.stop(), events.stop()]);
    },
  };
  started.set(host, points);
  host.provideContributionPoints(points);
  return points;
}

/** The contribution points of a running host (for the plugin API's route modules). */
export function contributionsOf(host: ExtensionHost | undefined): ContributionPoints {
  const points = host && started.get(host);
  if (!points) throw new KeelError(503, 'extension_host_unavailable', 'The extension host is not running', { expose: true });
  return points;
}
