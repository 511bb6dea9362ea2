/**
 * The Node.js flags the kernel runs with: `npm start` passes them (package.json, checked by
 * test/host/footprint.test.ts), and tests and benchmarks that start `kernel/main.ts` as a
 * process of its own pass the same, with KERNEL_ENV.
 * - `--no-node-snapshot`: what isolated-vm asks of the processes that load it (the kernel's
 *   tools share the flag).
 * - `--max-semi-space-size=16` (MiB): V8 sizes the young generation by the machine's memory, up
 *   to 64 MiB a semi-space on a machine of a few GiB, and keeps what it grew to. The kernel's
 *   start-up alone grew it to 128 MiB of heap, resident for the life of the process; 16 MiB
 *   semi-spaces (V8's default before) cost about 90 MiB less and a few more short collections.
 */
export const KERNEL_NODE_FLAGS: readonly string[] = ['--no-node-snapshot', '--max-semi-space-size=16'];

/**
 * The environment `npm start` gives the kernel besides the operator's. MALLOC_ARENA_MAX=2:
 * glibc's allocator keeps an arena per thread that allocates (V8's platform threads, libuv's
 * pool), each holding on to what it freed; two arenas keep the kernel about 20 MiB smaller.
 */
export const KERNEL_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
