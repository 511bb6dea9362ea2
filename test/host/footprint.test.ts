import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInNewContext } from 'node:vm';
import { KERNEL_ENV, KERNEL_NODE_FLAGS } from '../../kernel/node-flags.ts';
import { releaseStartupMemory } from '../../kernel/startup-memory.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { eventually, workerPids } from '../support/server-process.ts';

/**
 * What an instance keeps resident besides its work: esbuild's service process lives only while
 * builds run (sdk/build/bundler.ts), the kernel caps V8's young generation
 * (kernel/node-flags.ts), which `npm start` passes, and gives back what start-up left
 * (kernel/startup-memory.ts), and database pools close the connections they do not use
 * (kernel/db/connections.ts).
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;

/** esbuild service processes started by this process (the kernel under test runs in it). */
async function esbuildServices(): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)]).catch((error: { stdout?: string; code?: number }) => {
    if (error.code === 1) return { stdout: error.stdout ?? '' };
    throw error;
  });
  return stdout.split('\n').filter((line) => /esbuild\S* --service/.test(line)).map((line) => Number(line.trim().split(/\s+/)[0]));
}

beforeAll(async () => { t = await startTestKernel(); }, 60_000);
afterAll(async () => { await t?.stop(); });

describe('esbuild', () => {
  it('stops its service once the builds are done, and starts a fresh one for the next build', async () => {
    await installAndEnable(t, ECHO);
    expect((await t.api.post('/api/plugins/echo/echo', { n: 1 })).status).toBe(200);
    expect(await eventually(esbuildServices, (pids) => pids.length === 0)).toEqual([]);
    // Built again (install and enable build it): the service comes back for it, and goes again.
    await installAndEnable(t, await pluginVariant(ECHO, (m) => { m.key = 'echo-later'; m.database.namespace = 'echo_later'; }));
    expect((await t.api.post('/api/plugins/echo-later/echo', { n: 2 })).body).toEqual({ body: { n: 2 }, query: {} });
    expect(await eventually(esbuildServices, (pids) => pids.length === 0)).toEqual([]);
  });
});

describe('V8 young generation', () => {
  it('is capped in the kernel as npm start runs it (with its allocator arenas), and left to isolated-vm in plugin worker processes', async () => {
    const scripts = (JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const flag of KERNEL_NODE_FLAGS) expect(scripts.start!.split(/\s+/)).toContain(flag);
    for (const [name, value] of Object.entries(KERNEL_ENV)) expect(scripts.start!.split(/\s+/)).toContain(`${name}=${value}`);
    // The flag would override the young generation isolated-vm gives each plugin isolate.
    const workers = await eventually(() => workerPids(process.pid), (pids) => pids.length > 0);
    expect(workers.length).toBeGreaterThan(0);
    for (const pid of workers) {
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
      expect(argv.filter((arg) => arg.startsWith('--max-semi-space-size'))).toEqual([]);
      // The kernel's allocator setting, though: one glibc arena per allocating thread otherwise.
      const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
      for (const [name, value] of Object.entries(KERNEL_ENV)) expect(environ).toContain(`${name}=${value}`);
    }
  });

  it('is collected once after start-up without leaving a gc function to any context', () => {
    releaseStartupMemory();
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});

describe('idle database connections', () => {
  /** The open connections of this test database whose application name ends with `suffix`. */
  const connections = async (suffix: string) => Number((await t.sql.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = $1 and application_name like '%' || $2", [t.databaseName, suffix])).rows[0]!.n);

  it("a plugin's pool keeps one connection open once a burst is over; the others close after a second unused", async () => {
    await installAndEnable(t, await pluginVariant(ECHO, (m) => { m.key = 'echo-idle'; m.database.namespace = 'echo_idle'; }));
    // Six calls at once, each holding its own connection (a POST runs in a transaction) for a moment.
    const burst = await Promise.all(Array.from({ length: 6 }, () => t.api.post('/api/plugins/echo-idle/sql', { sql: 'select pg_sleep(0.2) is null as slept' })));
    expect(burst.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await connections('-echo-idle')).toBeGreaterThanOrEqual(2);
    expect(await eventually(() => connections('-echo-idle'), (n) => n <= 1)).toBe(1);
  });

  it('the job engine holds at most two connections', async () => {
    expect(await connections('keel-jobs')).toBeLessThanOrEqual(2);
  });
});
