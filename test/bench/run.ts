import { fileURLToPath } from 'node:url';
import { runBenches } from './support/bench-runner.ts';

/**
 * Runs the benchmarks in test/bench (`*.bench.ts`), or those whose name contains one of the
 * arguments: `npm run bench -- auth`. Each prints ratios measured in one run; none asserts. A
 * benchmark that fails prints why and the others still run; the exit code is 1 when any failed
 * (or when the filters match none).
 */
const filters = process.argv.slice(2);
const outcomes = await runBenches(fileURLToPath(new URL('.', import.meta.url)), filters);
// Exit now: a failed benchmark may have left a handle open (a timer, a pool) that would keep the runner alive.
process.exit(outcomes.length && outcomes.every((o) => o.ok) ? 0 : 1);
