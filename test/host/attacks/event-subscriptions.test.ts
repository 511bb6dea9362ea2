import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { fixture, install, variant } from './support.ts';

/**
 * A subscription that names an event no publisher can ever publish (a misspelled kernel event,
 * an undeclared event of a plugin the SDK declares, an event an installed plugin does not
 * publish) would wait for nothing in silence: the plugin's author believes it reacts to agent
 * creation, and it never does. Such a manifest is refused at install, upgrade and enable, and
 * nothing is stored. A subscription to a plugin that is not installed yet is accepted (it may be
 * installed later). docs/plugins/events.md, "Subscribing".
 */
const KEY = 'attack-subscribe';
let t: TestKernel;

beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

const subscribingTo = (event: string, change?: (manifest: any) => void) => variant(KEY, (manifest) => {
  manifest.events = [{ event, mode: 'after_commit' }];
  change?.(manifest);
});
const stored = async (): Promise<number> => (await t.sql.query('select count(*)::int as n from plugins where key = $1', [KEY])).rows[0].n;

describe('a subscription to an event that cannot exist', () => {
  it('is refused at install when it misspells a kernel event, and nothing is stored', async () => {
    const res = await t.api.post('/api/plugins/install', { localPath: fixture(KEY) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe('invalid_manifest');
    expect(res.body.error).toContain("events.0.event 'agent.creatd' is not a kernel event, and no plugin publishes under 'agent.' (known: agent.created, agent.updated, agent.status_changed)");
    expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['error', 'code', 'issues']));
    expect(await stored()).toBe(0);
  });

  it('is refused under every first segment of a kernel event, and under another reserved key', async () => {
    for (const event of ['proxy.finshed', 'execution.finised', 'company.craeted', 'system.tick']) {
      const res = await t.api.post('/api/plugins/install', { localPath: await subscribingTo(event) });
      expect(res.status, `${event}: ${res.text}`).toBe(422);
      expect(res.body.code).toBe('invalid_manifest');
      expect(res.body.error).toContain(`'${event}' is not a kernel event`);
    }
    expect(await stored()).toBe(0);
  });

  it('is refused when it names an event the SDK does not declare for its publisher', async () => {
    const res = await t.api.post('/api/plugins/install', { localPath: await subscribingTo('work.issue.craeted') });
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe('invalid_manifest');
    expect(res.body.error).toContain("'work.issue.craeted' is not an event work publishes (sdk/events declares its events) (known: work.issue.created,");
    expect(await stored()).toBe(0);
  });

  it("is refused when it names one of the plugin's own events that it does not publish", async () => {
    const res = await t.api.post('/api/plugins/install', { localPath: await subscribingTo(`${KEY}.thing.happened`) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe('invalid_manifest');
    expect(res.body.error).toContain(`'${KEY}.thing.happened' is not one of this plugin's publishedEvents`);
    expect(await stored()).toBe(0);
  });

  it('is refused when an installed plugin does not publish it, and accepted for a plugin not installed yet', async () => {
    const notYet = await t.api.post('/api/plugins/install', { localPath: await subscribingTo('outbox-fx.item.changed') });
    expect(notYet.status, notYet.text).toBe(201);
    expect((await t.api.delete(`/api/plugins/${KEY}`)).status).toBeLessThan(300);

    await install(t, fixture('outbox-fx'));
    const misspelled = await t.api.post('/api/plugins/install', { localPath: await subscribingTo('outbox-fx.item.chnged') });
    expect(misspelled.status, misspelled.text).toBe(422);
    expect(misspelled.body.code).toBe('event_not_published');
    expect(misspelled.body.error).toBe(`${KEY} subscribes to an event no plugin publishes: events.0.event 'outbox-fx.item.chnged' is not published by outbox-fx, which is installed and publishes outbox-fx.item.changed`);
    expect(await stored()).toBe(0);

    const published = await t.api.post('/api/plugins/install', { localPath: await subscribingTo('outbox-fx.item.changed') });
    expect(published.status, published.text).toBe(201);
    expect((await t.api.delete(`/api/plugins/${KEY}`)).status).toBeLessThan(300);
  });

  it('is refused at enable for a manifest stored before the check, and the plugin stays disabled', async () => {
    const res = await t.api.post('/api/plugins/install', { localPath: await subscribingTo('agent.created') });
    expect(res.status, res.text).toBe(201);
    await t.sql.query(`update plugins set manifest = jsonb_set(manifest, '{events,0,event}', '"agent.creatd"') where key = $1`, [KEY]);
    const enable = await t.api.post(`/api/plugins/${KEY}/enable`, {});
    expect(enable.status, enable.text).toBe(422);
    expect(enable.body.code).toBe('invalid_manifest');
    expect(enable.body.error).toContain("events.0.event 'agent.creatd' is not a kernel event");
    const row = (await t.sql.query('select status, granted_capabilities from plugins where key = $1', [KEY])).rows[0];
    expect(row.status).not.toBe('enabled');
    expect(row.granted_capabilities ?? []).toEqual([]);
  });
});
