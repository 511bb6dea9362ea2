import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installPlugin } from '../support/plugins.ts';

/**
 * A refused lifecycle change changes nothing: an enable whose grant leaves out a declared
 * capability is answered 409 before the plugin's row is written or its worker stopped.
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;

beforeAll(async () => {
  t = await startTestKernel();
  await installPlugin(t, ECHO);
});
afterAll(async () => { await t?.stop(); });

/** Everything an enable writes: the plugin's row and the activity log. */
async function stored() {
  const { rows: [row] } = await t.sql.query('select * from plugins where key = $1', ['echo']);
  const { rows: [activity] } = await t.sql.query<{ n: number }>('select count(*)::int as n from activity_log');
  return { row, activity: activity!.n };
}

describe('a refused enable', () => {
  it('of a plugin never enabled stores no grant and starts nothing', async () => {
    const before = await stored();
    expect(before.row.status).not.toBe('enabled');
    const refused = await t.api.post('/api/plugins/echo/enable', { grant: [] });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe('capability_grant_required');
    expect(refused.body.details.missingCapabilities).toContain('http.routes');
    expect(await stored()).toEqual(before);
    expect((await t.api.get('/api/plugins/echo/health')).body.worker).toEqual({ status: 'stopped' });
    expect((await t.api.post('/api/plugins/echo/echo', { hello: 1 })).status).toBe(404);
  });

  it('of a running plugin with a narrower grant keeps its grant, its status and its worker serving', async () => {
    const enabled = await t.api.post('/api/plugins/echo/enable', {});
    expect(enabled.status, enabled.text).toBe(200);
    const before = await stored();
    const worker = (await t.api.get('/api/plugins/echo/health')).body.worker;
    expect(worker.status).toBe('running');

    for (const grant of [[], ['http.routes'], ['http.routes', 'database.namespace.write', 'database.namespace.migrate', 'activity.write']]) {
      const refused = await t.api.post('/api/plugins/echo/enable', { grant });
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body.code).toBe('capability_grant_required');
    }

    expect(await stored()).toEqual(before);
    expect(before.row.status).toBe('enabled');
    expect(before.row.granted_capabilities).toHaveLength(5);
    // The same worker, never stopped: started at the same moment, and its routes answer.
    expect((await t.api.get('/api/plugins/echo/health')).body.worker).toMatchObject({ status: 'running', pid: worker.pid, startedAt: worker.startedAt, restarts: worker.restarts });
    const echoed = await t.api.post('/api/plugins/echo/echo', { still: 'here' });
    expect(echoed.status, echoed.text).toBe(200);
    expect(echoed.body.body).toEqual({ still: 'here' });
  });

  it('naming an undeclared capability also leaves a running plugin as it was', async () => {
    const before = await stored();
    const refused = await t.api.post('/api/plugins/echo/enable', { grant: ['http.routes', 'agents.pause'] });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.code).toBe('capability_not_declared');
    expect(await stored()).toEqual(before);
    expect((await t.api.post('/api/plugins/echo/echo', {})).status).toBe(200);
  });
});
