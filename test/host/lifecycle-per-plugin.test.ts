import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPeerKernel, startTestKernel, type TestKernel } from '../support/harness.ts';

const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
const WIKI = 'llm-wiki';
/** The lifecycle lock family of kernel/host/cluster-lock.ts: one lock per plugin key. */
const LIFECYCLE = 727002;

let t: TestKernel;
beforeAll(async () => {
  t = await startTestKernel();
  expect((await t.api.post('/api/plugins/install', { localPath: ECHO })).status).toBe(201);
  expect((await t.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
  expect((await t.api.post('/api/plugins/install', { packageName: '@keel/plugin-wiki' })).status).toBe(201);
});
afterAll(async () => { await t?.stop(); });

/**
 * Takes a plugin's lifecycle lock on a session of its own, as another Keel process in the
 * middle of a lifecycle change of that plugin holds it; `release` ends that change.
 */
async function holdLifecycle(key: string): Promise<{ release(): Promise<void> }> {
  const client = await t.sql.connect();
  await client.query('select pg_advisory_lock($1, hashtext($2))', [LIFECYCLE, key]);
  return {
    async release() {
      await client.query('select pg_advisory_unlock($1, hashtext($2))', [LIFECYCLE, key]);
      client.release();
    },
  };
}

/** Settles once a session waits for the lifecycle lock of `key` (a change of it has reached the lock). */
async function someoneWaitsFor(sql: pg.Pool, key: string): Promise<void> {
  for (const until = Date.now() + 20_000; ;) {
    const { rows } = await sql.query(
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and classid = $1 and objid = hashtext($2)::oid and objsubid = 2`, [LIFECYCLE, key]);
    if (rows[0].n > 0) return;
    if (Date.now() > until) throw new Error(`no lifecycle change of ${key} waits for its lock`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (const until = Date.now() + 20_000; !accept(value) && Date.now() < until; value = await probe()) await new Promise((resolve) => setTimeout(resolve, 50));
  return value;
}

async function status(key: string): Promise<string> {
  return (await t.sql.query('select status from plugins where key = $1', [key])).rows[0].status;
}

describe('plugin lifecycle, one plugin at a time', () => {
  it('enables the wiki while another plugin\'s lifecycle change is held up, here and in another process', async () => {
    const held = await holdLifecycle('echo');
    let disabled: Promise<number> | null = null;
    let echoDone = false;
    try {
      // Queued in this process behind the held lock: echo's lifecycle work is in progress here too.
      disabled = t.api.post('/api/plugins/echo/disable', {}).then((res) => { echoDone = true; return res.status; });
      await someoneWaitsFor(t.sql, 'echo');
      const enabled = await t.api.post(`/api/plugins/${WIKI}/enable`, {});
      expect(enabled.status, enabled.text).toBe(200);
      expect(await status(WIKI)).toBe('enabled');
      expect((await t.api.get(`/api/plugins/${WIKI}/health`)).body).toMatchObject({ status: 'enabled' });
      // Echo's change still waits for its lock (which the test holds): the wiki did not wait for it.
      expect(echoDone).toBe(false);
      expect(await status('echo')).toBe('enabled');
    } finally {
      await held.release();
    }
    expect(await disabled).toBe(200);
    expect(await status('echo')).toBe('disabled');
    expect((await t.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
  }, 60_000);

  it('waits for a change of the same plugin another process holds, then applies its own', async () => {
    const held = await holdLifecycle(WIKI);
    let disabled: Promise<number> | null = null;
    try {
      disabled = t.api.post(`/api/plugins/${WIKI}/disable`, {}).then((res) => res.status);
      await someoneWaitsFor(t.sql, WIKI);
      // Whatever the other process decides meanwhile, this change has not been applied.
      expect(await status(WIKI)).toBe('enabled');
    } finally {
      await held.release();
    }
    expect(await disabled).toBe(200);
    expect(await status(WIKI)).toBe('disabled');
  }, 60_000);

  it('two processes enabling the same plugin at once end consistent: enabled once, migrated once, served by both', async () => {
    const peer = await startPeerKernel(t);
    try {
      const answers = await Promise.all([t.api.post(`/api/plugins/${WIKI}/enable`, {}), peer.api.post(`/api/plugins/${WIKI}/enable`, {})]);
      expect(answers.map((res) => res.status), answers.map((res) => res.text).join('\n')).toEqual([200, 200]);
      expect(await status(WIKI)).toBe('enabled');
      const migrations = (await t.sql.query('select name, count(*)::int as n from plugin_migrations where plugin_key = $1 group by name order by name', [WIKI])).rows;
      expect(migrations.map((row) => row.n)).toEqual(migrations.map(() => 1));
      expect(migrations.length).toBeGreaterThan(0);
      const enabledEntries = (await t.sql.query(`select count(*)::int as n from activity_log where action = 'plugin.enabled' and entity_id = $1`, [WIKI])).rows[0].n;
      // Three enables of the wiki in this file (the first test's, and these two): each applied whole, one after the other.
      expect(enabledEntries).toBe(3);
      // Each process runs the wiki (one may still be restarting its worker on the other's announcement).
      for (const api of [t.api, peer.api]) {
        const health = await eventually(() => api.get(`/api/plugins/${WIKI}/health`), (res) => res.body?.worker?.status === 'running');
        expect(health.body).toMatchObject({ status: 'enabled', worker: { status: 'running' } });
      }
    } finally {
      await peer.stop();
    }
  }, 90_000);
});
