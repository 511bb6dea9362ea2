import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';

/**
 * A plugin's `ctx` is typed from its plugin.json (src/plugin.gen.ts, written by `keel plugin
 * build`), and the bundle carries the capabilities the code was typed against. Code typed
 * against a manifest that declared more than the installed plugin.json (the module not written
 * again after a capability was removed) must not run: its handlers would find a `ctx` member
 * missing halfway through a write.
 */
const LIVE_NOTES = fileURLToPath(new URL('../../examples/live-notes', import.meta.url));
let t: TestKernel;
let company: any;
const folders: string[] = [];

/** The live-notes example under its own key and schema, its manifest changed by `change`. */
async function liveNotes(key: string, change: (manifest: any) => void = () => undefined): Promise<string> {
  const folder = await pluginVariant(LIVE_NOTES, (manifest) => {
    manifest.key = key;
    manifest.database.namespace = key.replaceAll('-', '_');
    delete manifest.tag;
    change(manifest);
  });
  folders.push(folder);
  return installAndEnable(t, folder);
}

const noteCount = async (schema: string): Promise<number> =>
  (await t.sql.query(`select count(*)::int as n from plugin_${schema}.notes where company_id = $1`, [company.id])).rows[0].n;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
});
afterAll(async () => {
  await t?.stop();
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

describe('ctx typed from plugin.json', () => {
  it('runs code built from the manifest it is installed with', async () => {
    const key = await liveNotes('notes-as-built');
    const added = await t.api.post(`/api/plugins/${key}/companies/${company.id}/notes`, { text: 'first' });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({ text: 'first' });
    expect(await noteCount('notes_as_built')).toBe(1);
  });

  it('refuses every call of code typed for a capability its plugin.json no longer declares, writing nothing', async () => {
    // plugin.json loses ui.streams; src/plugin.gen.ts still lists it, as the code was typed with it.
    const key = await liveNotes('notes-narrowed', (manifest) => {
      manifest.capabilities = manifest.capabilities.filter((capability: { id: string }) => capability.id !== 'ui.streams');
    });
    const added = await t.api.post(`/api/plugins/${key}/companies/${company.id}/notes`, { text: 'never stored' });
    expect(added.status, added.text).toBe(500);
    expect(added.body.code).toBe('capability_not_granted');
    expect(added.body.error).toContain('ui.streams');
    expect(added.body.error).toContain('keel plugin build');
    // A read is refused as well: the code never runs with a ctx narrower than its types.
    const read = await t.api.get(`/api/plugins/${key}/companies/${company.id}/notes`);
    expect([read.status, read.body.code]).toEqual([500, 'capability_not_granted']);
    expect(await noteCount('notes_narrowed')).toBe(0);
  });
});
