import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

const PANEL = fileURLToPath(new URL('./fixtures/ui-bridge', import.meta.url));
let dir: string;
let t: TestKernel | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keel-first-party-'));
  await cp(PANEL, join(dir, 'fp-panel'), { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'fp-panel', 'plugin.json'), 'utf8'));
  await writeFile(join(dir, 'fp-panel', 'plugin.json'), JSON.stringify({ ...manifest, key: 'fp-panel', tag: 'first-party' }));
});
afterAll(async () => {
  await t?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('first-party plugins', () => {
  it('are installed and enabled on a fresh instance, and stay disabled once an operator disables them', async () => {
    t = await startTestKernel({}, { firstPartyDir: dir });
    const listed = await t.api.get('/api/plugins/fp-panel');
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ status: 'enabled', sourceKind: 'first_party', tag: 'first-party', running: 'running' });
    expect(listed.body.grantedCapabilities).toEqual(['ui.slots', 'ui.streams', 'activity.write']);
    expect((await t.api.post('/api/plugins/fp-panel/data/summary', {})).status).toBe(200);

    expect((await t.api.post('/api/plugins/fp-panel/disable', {})).status).toBe(200);
    // What a restart does: the host starts again over the same database and plugin folders.
    await t.kernel.host.start({ bootstrapFirstParty: true, firstPartyDir: dir });
    const after = await t.api.get('/api/plugins/fp-panel');
    expect(after.body).toMatchObject({ status: 'disabled', running: 'stopped' });
    expect((await t.api.post('/api/plugins/fp-panel/data/summary', {})).status).toBe(404);
    const activity = await t.sql.query("select action, actor_type, actor_id from activity_log where entity_type = 'plugin' and entity_id = 'fp-panel' order by seq");
    expect(activity.rows).toEqual([
      { action: 'plugin.installed', actor_type: 'system', actor_id: 'extension-host' },
      { action: 'plugin.enabled', actor_type: 'system', actor_id: 'extension-host' },
      { action: 'plugin.disabled', actor_type: 'user', actor_id: 'local-board' },
    ]);
  }, 60_000);

  it('are upgraded in place when a new release ships them changed, with the capabilities they newly declare granted', async () => {
    const manifestPath = join(dir, 'fp-panel', 'plugin.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
    expect((await t!.api.post('/api/plugins/fp-panel/enable', {})).status).toBe(200);
    // The operator withholds nothing here; the new release adds a capability and a version.
    await writeFile(manifestPath, JSON.stringify({ ...manifest, version: '1.1.0', capabilities: [...manifest.capabilities, { id: 'companies.read', reason: 'Reads the company' }] }));
    await t!.kernel.host.start({ bootstrapFirstParty: true, firstPartyDir: dir });
    const upgraded = (await t!.api.get('/api/plugins/fp-panel')).body;
    expect(upgraded).toMatchObject({ status: 'enabled', version: '1.1.0', running: 'running' });
    expect(upgraded.grantedCapabilities).toEqual(['ui.slots', 'ui.streams', 'activity.write', 'companies.read']);
    const upgrades = async () => (await t!.sql.query("select details from activity_log where entity_id = 'fp-panel' and action = 'plugin.upgraded' order by seq")).rows.map((r: any) => r.details);
    expect(await upgrades()).toEqual([expect.objectContaining({ from: '1.0.0', to: '1.1.0', granted: ['companies.read'] })]);
    // Started again on the same release: nothing to upgrade (the stored manifest is compared canonically).
    await t!.kernel.host.start({ bootstrapFirstParty: true, firstPartyDir: dir });
    expect(await upgrades()).toHaveLength(1);
  }, 60_000);
});
