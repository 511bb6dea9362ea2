import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../support/events.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/filter-fx', import.meta.url));
const KEY = 'filter-fx';
let t: TestKernel;
/** A copy of the fixture: an upgrade re-reads the installed plugin's own folder. */
let folder: string;

beforeAll(async () => {
  t = await startTestKernel();
  folder = await pluginVariant(FIXTURE, () => undefined);
  await installAndEnable(t, folder);
});
afterAll(async () => { await t?.stop(); });

/** The subscriber's deliveries of the company's status changes, with the status each went to. */
const deliveredTo = async (companyId: string) => (await t.sql.query(
  `select o.payload ->> 'to' as "to", d.state from keel_events.outbox o join keel_events.deliveries d on d.event_id = o.id
    where o.name = 'company.status_changed' and o.company_id = $1 and d.subscriber = $2 order by o.seq`, [companyId, KEY])).rows;
const recorded = async (event: string, companyId: string) =>
  (await t.sql.query('select payload ->> \'to\' as "to" from plugin_filterfx.events where event = $1 and company_id = $2 order by id', [event, companyId])).rows;

describe("a subscription's delivery filter (where)", () => {
  it('delivers only the events whose payload meets it: no delivery row, no call, for the others', async () => {
    const company = (await t.api.post('/api/companies', { name: 'Filtered' })).body;
    for (const status of ['paused', 'active', 'paused', 'active']) {
      const res = await t.api.patch(`/api/companies/${company.id}`, { status });
      expect(res.status, res.text).toBe(200);
    }
    await eventsSettled(t);
    // Every change was appended; only the two to `paused` reached the subscriber.
    const appended = await t.sql.query("select payload ->> 'to' as \"to\" from keel_events.outbox where name = 'company.status_changed' and company_id = $1 order by seq", [company.id]);
    expect(appended.rows.map((row) => row.to)).toEqual(['paused', 'active', 'paused', 'active']);
    expect(await deliveredTo(company.id)).toEqual([{ to: 'paused', state: 'delivered' }, { to: 'paused', state: 'delivered' }]);
    expect(await recorded('company.status_changed', company.id)).toEqual([{ to: 'paused' }, { to: 'paused' }]);
    // An unfiltered subscription of the same plugin hears every update.
    expect((await recorded('company.updated', company.id)).length).toBe(4);
  });

  it('follows the manifest: an upgrade that drops the filter delivers every later event', async () => {
    const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
    manifest.version = '1.0.1';
    delete manifest.events[0].where;
    await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
    const upgraded = await t.api.post(`/api/plugins/${KEY}/upgrade`, {});
    expect(upgraded.status, upgraded.text).toBe(200);
    const company = (await t.api.post('/api/companies', { name: 'Unfiltered' })).body;
    expect((await t.api.patch(`/api/companies/${company.id}`, { status: 'paused' })).status).toBe(200);
    expect((await t.api.patch(`/api/companies/${company.id}`, { status: 'active' })).status).toBe(200);
    await eventsSettled(t);
    expect((await deliveredTo(company.id)).map((row) => row.to)).toEqual(['paused', 'active']);
  });

  it('is refused at install when malformed (422 invalid_manifest, nothing stored)', async () => {
    const bad = await pluginVariant(FIXTURE, (manifest) => {
      manifest.key = 'filter-fx-bad';
      manifest.database.namespace = 'filterfxbad';
      manifest.events[0].where = { to: { in: [{ nested: true }] } };
    });
    const res = await t.api.post('/api/plugins/install', { localPath: bad });
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe('invalid_manifest');
    expect((await t.sql.query("select count(*)::int as n from plugins where key = 'filter-fx-bad'")).rows[0].n).toBe(0);
  });
});

describe('the filter function', () => {
  const holds = async (payload: unknown, where: unknown) =>
    (await t.sql.query('select keel_private.delivery_filter_holds($1::jsonb, $2::jsonb) as holds', [JSON.stringify(payload), JSON.stringify(where)])).rows[0].holds;

  it('compares scalars exactly and tells empty from missing', async () => {
    expect(await holds({ to: 'paused' }, { to: { in: ['paused', 'archived'] } })).toBe(true);
    expect(await holds({ to: 'active' }, { to: { in: ['paused'] } })).toBe(false);
    expect(await holds({ to: ['paused'] }, { to: { in: ['paused'] } })).toBe(false);
    expect(await holds({ n: 1 }, { n: { in: [1] } })).toBe(true);
    expect(await holds({ n: '1' }, { n: { in: [1] } })).toBe(false);
    expect(await holds({ r: null }, { r: { in: [null] } })).toBe(true);
    expect(await holds({}, { r: { in: [null] } })).toBe(false);
    expect(await holds({ ids: ['a'] }, { ids: { nonEmpty: true } })).toBe(true);
    expect(await holds({ ids: [] }, { ids: { nonEmpty: true } })).toBe(false);
    expect(await holds({ ids: {} }, { ids: { nonEmpty: true } })).toBe(false);
    expect(await holds({ ids: '' }, { ids: { nonEmpty: true } })).toBe(false);
    expect(await holds({ ids: 'x' }, { ids: { nonEmpty: true } })).toBe(true);
    expect(await holds({}, { ids: { nonEmpty: true } })).toBe(false);
    // Every condition must hold.
    expect(await holds({ to: 'paused', ids: [] }, { to: { in: ['paused'] }, ids: { nonEmpty: true } })).toBe(false);
    expect(await holds({ to: 'paused', ids: [1] }, { to: { in: ['paused'] }, ids: { nonEmpty: true } })).toBe(true);
  });
});
