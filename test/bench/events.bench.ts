import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/task-assignments', import.meta.url));
const ONE_AT_A_TIME = Number(process.env.EVENTS_BENCH_SEQUENTIAL ?? 200);
const BURST = Number(process.env.EVENTS_BENCH_BURST ?? 1000);
const BURST_CONNECTIONS = 16;

/**
 * Durable event delivery, in one run: latency from the publishing transaction to the
 * subscriber's handler (examples/task-assignments: an assignment publishes an event in its own
 * transaction; the subscriber writes a notification). Measured on the database's clock: from
 * the outbox row's created_at (the publishing transaction's start, so the figure includes that
 * transaction's own short run to its commit) to the notification's clock_timestamp() in the
 * subscriber's transaction. Once with one assignment at a time (each waits for its answer,
 * not for its delivery), once as a burst from 16 connections.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess();
  try {
    await kernel.call('POST', '/api/plugins/install', { localPath: EXAMPLE });
    await kernel.call('POST', '/api/plugins/task-assignments/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Events Bench' });
    const assign = (task: string) => kernel.call('POST', `/api/plugins/task-assignments/companies/${company.id}/tasks/${task}/assign`, { assignee: 'bench' });
    const sql = await kernel.sql();

    const measure = async (prefix: string, total: number, publish: () => Promise<void>) => {
      const started = performance.now();
      await publish();
      for (;;) {
        const { rows } = await sql.query('select count(*)::int as n from plugin_task_assignments.notifications where task_id like $1', [`${prefix}%`]);
        if (rows[0].n >= total) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const elapsedMs = performance.now() - started;
      const { rows } = await sql.query(
        `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.99) within group (order by ms) as p99, max(ms) as max
           from (select extract(epoch from (n.received_at - o.created_at)) * 1000 as ms
                   from plugin_task_assignments.notifications n join keel_events.outbox o on o.id = n.event_id
                  where n.task_id like $1) x`, [`${prefix}%`]);
      return { p50: Number(rows[0].p50).toFixed(1), p99: Number(rows[0].p99).toFixed(1), max: Number(rows[0].max).toFixed(1), perSecond: Math.round(total / (elapsedMs / 1000)) };
    };

    const sequential = await measure('seq-', ONE_AT_A_TIME, async () => {
      for (let i = 0; i < ONE_AT_A_TIME; i++) await assign(`seq-${i}`);
    });
    const burst = await measure('burst-', BURST, async () => {
      let next = 0;
      await Promise.all(Array.from({ length: BURST_CONNECTIONS }, async () => {
        while (next < BURST) await assign(`burst-${next++}`);
      }));
    });
    printTable('Durable events: commit -> subscriber (examples/task-assignments)', [
      { load: `${ONE_AT_A_TIME} events, one at a time`, 'p50 ms': sequential.p50, 'p99 ms': sequential.p99, 'max ms': sequential.max, 'delivered/s': sequential.perSecond },
      { load: `${BURST} events, ${BURST_CONNECTIONS} connections`, 'p50 ms': burst.p50, 'p99 ms': burst.p99, 'max ms': burst.max, 'delivered/s': burst.perSecond },
    ]);
  } finally {
    await kernel.stop();
  }
}
