import { rm } from 'node:fs/promises';
import pg from 'pg';
import { AGENT_SCRIPT_NAME, agentKind, buildFleet, resumeFleet } from './support/fleet-world.ts';
import { coalescedSince, heartbeatRuns, load1, meanOf, runtimeJobTimes, sampleConnections, type ConnectionSample, type RunSample } from './support/fleet-sampler.ts';
import { readCpu, type CpuReading } from './support/process-cpu.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const positive = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number of at least 1 (got ${process.env[name]})`);
  return value;
};
const INTERVAL_SEC = 60;
/** A run may wait at most this long from its heartbeat's due time to its process's start (the goal). */
const GOAL_WAIT_MS = 5000;
const SAMPLE_MS = 2000;

const pct = (values: number[], p: number) => (values.length ? [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]! : NaN);
const ms = (value: number) => (Number.isNaN(value) ? '-' : `${Math.round(value)}`);

/**
 * A fleet of agents on one machine (issue 30, point 5): agents in companies, each with its
 * heartbeat every minute (`runtimeConfig.heartbeat`, fired by the runtime plugin's own timers on
 * the job queue, nothing here wakes them), each heartbeat a real process of the `process`
 * adapter that reads its inbox, comments on its issue and reports usage. Per minute: runs
 * completed per second, wakeup to process start and the heartbeat's due time to process start
 * (p50 / p99 / max), the database's client connections (mean / max of a sample every 2 s) and the
 * CPU of the database, of Keel (kernel and plugin workers) and of the agent processes, in cores.
 *
 * The default is short (200 agents, 2 minutes: about 3.5 minutes with the setup); the full run is
 *   KEEL_BENCH_FLEET_AGENTS=1000 KEEL_BENCH_FLEET_MINUTES=5 npm run bench -- fleet
 * (its setup alone takes 3-4 minutes on a loaded 2-core machine; KEEL_BENCH_FLEET_COMPANIES,
 * default 10, spreads the agents over companies; KEEL_BENCH_FLEET_AGENT=sh|node chooses the agent
 * process, a shell script with curl where curl is installed, see fleet-world.ts). Agents are set up paused, so that the setup
 * starts no run, and resumed together when the measured minutes begin.
 */
/** The runner's time limit for this run: the setup (about 0.3 s an agent on a loaded machine), the measured minutes, the settling and the stop. */
export const timeLimitSec = () => 240 + 0.3 * positive('KEEL_BENCH_FLEET_AGENTS', 200) + 60 * positive('KEEL_BENCH_FLEET_MINUTES', 2);

export async function run(): Promise<void> {
  const shape = { agents: positive('KEEL_BENCH_FLEET_AGENTS', 200), companies: positive('KEEL_BENCH_FLEET_COMPANIES', 10), intervalSec: INTERVAL_SEC };
  const minutes = positive('KEEL_BENCH_FLEET_MINUTES', 2);
  const agent = agentKind();
  const kernel = await startKernelProcess();
  let scriptDir: string | null = null;
  let pool: pg.Pool | null = null;
  try {
    pool = new pg.Pool({ connectionString: await kernel.databaseUrl(), max: 1, application_name: 'fleet-bench' });
    const setupStarted = performance.now();
    const fleet = await buildFleet(kernel, shape, agent, (line) => console.log(line));
    scriptDir = fleet.scriptDir;
    await resumeFleet(kernel, fleet);
    console.log(`${shape.agents} agents (${agent === 'sh' ? 'a shell script with curl' : 'a Node script'}) in ${shape.companies} companies set up and resumed in ${((performance.now() - setupStarted) / 1000).toFixed(0)} s; measuring ${minutes} minute(s)`);

    const begin = Date.now();
    const rows: Array<Record<string, string | number>> = [];
    let cpuBefore: CpuReading = await readCpu(kernel.pid, AGENT_SCRIPT_NAME);
    for (let minute = 0; minute < minutes; minute++) {
      const from = begin + minute * 60_000;
      const until = from + 60_000;
      const connections: ConnectionSample[] = [];
      while (Date.now() < until) {
        connections.push(await sampleConnections(pool));
        await new Promise((resolve) => setTimeout(resolve, Math.min(SAMPLE_MS, Math.max(0, until - Date.now()))));
      }
      const cpuAfter = await readCpu(kernel.pid, AGENT_SCRIPT_NAME);
      const seconds = (cpuAfter.at - cpuBefore.at) / 1000;
      const cores = (['database', 'keel', 'agents'] as const).map((key) => ((cpuAfter[key] - cpuBefore[key]) / seconds).toFixed(2));
      cpuBefore = cpuAfter;
      const runs = await heartbeatRuns(pool, from - 2 * 60_000);
      const ended = runs.filter((r) => r.finishedAt !== null && r.finishedAt >= from && r.finishedAt < until);
      const succeeded = ended.filter((r) => r.status === 'succeeded');
      // Runs whose process started this minute (woken this minute or in the one before).
      const started = runs.filter((r) => r.startedAt !== null && r.startedAt >= from && r.startedAt < until);
      const wakeToStart = started.map((r) => r.startedAt! - r.wokenAt);
      const dueToStart = started.filter((r) => r.dueAt !== null).map((r) => r.startedAt! - r.dueAt!);
      rows.push({
        minute: minute + 1,
        'runs/s': (succeeded.length / 60).toFixed(2),
        'ended ok / not ok': `${succeeded.length} / ${ended.length - succeeded.length}`,
        'wake->start p50/p99 ms': `${ms(pct(wakeToStart, 50))} / ${ms(pct(wakeToStart, 99))}`,
        'due->start p50/p99/max ms': `${ms(pct(dueToStart, 50))} / ${ms(pct(dueToStart, 99))} / ${ms(dueToStart.length ? Math.max(...dueToStart) : NaN)}`,
        'coalesced wakes': await coalescedSince(pool, from, until),
        'db conns mean/max': `${(connections.reduce((t, c) => t + c.total, 0) / connections.length).toFixed(0)} / ${Math.max(...connections.map((c) => c.total))} (active max ${Math.max(...connections.map((c) => c.active))}, idle in tx max ${Math.max(...connections.map((c) => c.idleInTransaction))})`,
        'db waits (mean busy backends)': meanOf(connections.map((c) => c.waits)),
        'jobs due not started (mean)': meanOf(connections.map((c) => c.backlog)),
        'jobs running / their runs (mean)': meanOf(connections.map((c) => c.running)),
        'events not yet handled (mean / max)': `${meanOf(connections.map((c) => c.deliveries), 2)} / ${Math.max(...connections.map((c) => Object.values(c.deliveries).reduce((t, n) => t + n, 0)))}`,
        'CPU cores db/keel/agents': cores.join(' / '),
        load: load1().toFixed(1),
      });
      console.log(`minute ${minute + 1}: ${JSON.stringify(rows.at(-1))}`);
    }

    // The heartbeats due in the measured minutes, once their runs ended (their comment and usage recorded), or 30 s after.
    const end = begin + minutes * 60_000;
    const due = await settledRuns(pool, begin, end);
    const waits = due.map((r) => (r.startedAt ?? Date.now()) - r.dueAt!);
    const lateRuns = due.filter((r, i) => waits[i]! > GOAL_WAIT_MS);
    const late = lateRuns.length;
    const lateDue = lateRuns.map((r) => Math.round((r.dueAt! - begin) / 1000));
    const succeeded = due.filter((r) => r.status === 'succeeded');
    const incomplete = succeeded.filter((r) => !r.commented || r.usageReports < 1).length;
    printTable(`Fleet: ${shape.agents} agents in ${shape.companies} companies, a heartbeat every ${INTERVAL_SEC} s each (a real process, ${agent === 'sh' ? 'sh + curl' : 'node'}: inbox, comment, usage), per minute`, rows);
    printTable('Fleet: the heartbeats due in the measured minutes', [
      { measure: 'heartbeats due (one a minute per agent) / runs of them / succeeded', value: `${shape.agents * minutes} / ${due.length} / ${succeeded.length}` },
      { measure: 'due -> process start, p50 / p99 / max', value: `${ms(pct(waits, 50))} / ${ms(pct(waits, 99))} / ${ms(waits.length ? Math.max(...waits) : NaN)} ms` },
      { measure: `runs waiting more than ${GOAL_WAIT_MS / 1000} s to start (goal: none)`, value: late },
      { measure: 'their due times, s after measuring began (first / last)', value: late ? `${Math.min(...lateDue)} / ${Math.max(...lateDue)}` : '-' },
      { measure: 'where their wait went, p50 / max ms: due -> job taken, job taken -> wake, wake -> process start', value: late ? lateParts(lateRuns) : '-' },
      { measure: 'succeeded runs without their comment or usage report', value: incomplete },
      { measure: 'timer wakes coalesced into a run still going (a heartbeat that started no run)', value: await coalescedSince(pool, begin, end) },
    ]);
    printTable("Fleet: the runtime's jobs in the measured minutes (a heartbeat slot firing, a start-runs pass starting a run)", await runtimeJobTimes(pool, begin, end));
  } finally {
    await pool?.end();
    await kernel.stop();
    if (scriptDir) await rm(scriptDir, { recursive: true, force: true });
  }
}

/** The three parts of late runs' waits: in the job queue, in the heartbeat job until its wake, and from the wake to the process. */
function lateParts(runs: RunSample[]): string {
  const part = (values: number[]) => (values.length ? `${ms(pct(values, 50))} / ${ms(Math.max(...values))}` : '-');
  const taken = runs.filter((r) => r.jobStartedAt !== null);
  return [
    part(taken.map((r) => r.jobStartedAt! - r.dueAt!)),
    part(taken.map((r) => r.wokenAt - r.jobStartedAt!)),
    part(runs.filter((r) => r.startedAt !== null).map((r) => r.startedAt! - r.wokenAt)),
  ].join(', ');
}

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** The runs of heartbeats due in [from, until), once each ended with its usage recorded (usage is handled after the process's end), or after 30 s. */
async function settledRuns(pool: pg.Pool, from: number, until: number): Promise<RunSample[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const runs = (await heartbeatRuns(pool, from - 2 * 60_000)).filter((r) => r.dueAt !== null && r.dueAt >= from && r.dueAt < until);
    const settled = runs.every((r) => ENDED.has(r.status) && (r.status !== 'succeeded' || r.usageReports > 0));
    if (settled || Date.now() > deadline) return runs;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
