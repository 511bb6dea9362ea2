import { fileURLToPath } from 'node:url';
import { runBenches } from './support/bench-runner.ts';

/**
 * Runs the benchmarks in test/bench (`*.bench.ts`), or those whose name contains one of the
 * arguments: `npm run bench -- auth`. Each prints ratios measured in one run; none asserts. A
 * benchmark that fails, or runs past its time limit, prints why and the others still run; the
 * exit code is 1 when any failed (or when the filters match none).
 */
const filters = process.argv.slice(2);
// KEEL_BENCH_TIME_LIMIT_SEC: one time limit for every benchmark, over each one's own (default 10 minutes).
const limitSec = Number(process.env.KEEL_BENCH_TIME_LIMIT_SEC ?? Number.NaN);
const outcomes = await runBenches(fileURLToPath(new URL('.', import.meta.url)), filters, console.log, Number.isFinite(limitSec) && limitSec > 0 ? { limitMs: limitSec * 1000 } : {});
// Exit now: a failed benchmark may have left a handle open (a timer, a pool) that would keep the runner alive.
process.exit(outcomes.length && outcomes.every((o) => o.ok) ? 0 : 1);
