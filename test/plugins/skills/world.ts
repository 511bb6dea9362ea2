import { accessSync, constants, realpathSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';

/**
 * A kernel with the first-party plugins, where the skills plugin may reach a local fixture
 * server: a copy of plugins/ whose skills manifest allows localhost:<port> (the manifest's
 * allow-list is fixed per plugin), the operator's loopback allowance for it, and the GitHub
 * API base set in the plugin's configuration.
 */
export async function startSkillsWorld(port: number): Promise<{ t: TestKernel; cleanup: () => Promise<void> }> {
  const work = await mkdtemp(join(tmpdir(), 'keel-skills-plugins-'));
  await cp(FIRST_PARTY_PLUGINS, work, { recursive: true });
  const manifestPath = join(work, 'skills', 'plugin.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  manifest.network = { allow: [...manifest.network.allow, `localhost:${port}`] };
  await writeFile(manifestPath, JSON.stringify(manifest));
  const t = await startTestKernel({ plugins: { privateNetworkHosts: ['skills@localhost'] } }, { firstPartyDir: work });
  const configured = await t.api.post('/api/plugins/skills/config', { config: { githubApiBase: `http://localhost:${port}` } });
  if (configured.status !== 200) throw new Error(`plugin config answered ${configured.status}: ${configured.text}`);
  return { t, cleanup: async () => { await t.stop(); await rm(work, { recursive: true, force: true }); } };
}

/** A writable folder outside the temporary directory (not an import root by default), wherever the checkout lies. */
export function outsideTmp(): string {
  const tmp = realpathSync(tmpdir());
  const candidate = ['/var/tmp', homedir(), '/root'].find((dir) => {
    try { return !`${realpathSync(dir)}/`.startsWith(`${tmp}/`) && (accessSync(dir, constants.W_OK), true); } catch { return false; }
  });
  if (!candidate) throw new Error('no writable folder outside the temporary directory for this test');
  return candidate;
}
