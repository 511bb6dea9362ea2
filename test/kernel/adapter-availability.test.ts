import { accessSync, constants } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * The adapter catalog says, per adapter type, whether this instance can run it now: the
 * runtime's own types, the local coding tools of the coding-agents plugin (ready only when the
 * tool is on the drivers' PATH, else its install command), types no plugin drives, and what
 * changes when the plugin that runs them is disabled.
 */
const installed = (executable: string) => ['/usr/local/bin', '/usr/bin', '/bin'].some((dir) => {
  try { accessSync(`${dir}/${executable}`, constants.X_OK); return true; } catch { return false; }
});

describe('adapter availability in the catalog', () => {
  let t: TestKernel;
  beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
  afterAll(async () => { await t?.stop(); });

  const catalog = async () => {
    const res = await t.api.get('/api/llms/agent-configuration.json');
    expect(res.status, res.text).toBe(200);
    return Object.fromEntries((res.body.adapterTypes as any[]).map((entry) => [entry.type, entry]));
  };

  it('answers each type with its status, the reason it cannot run and what to do', async () => {
    const types = await catalog();
    expect(types.process.availability).toEqual({ status: 'ready', reason: null, installHint: null });
    expect(types.http.availability).toEqual({ status: 'ready', reason: null, installHint: null });
    expect(types.eta_local.availability).toEqual({ status: 'unavailable', reason: 'No installed plugin runs this adapter type.', installHint: 'Install a plugin that contributes it, or use process with a command of your own.' });
    expect(types.zeta_gateway.availability.status).toBe('unavailable');
    for (const type of ['alpha_local', 'beta_local', 'gamma_local', 'delta_local', 'pi_local', 'cursor']) {
      const { tool, availability } = types[type];
      expect(tool.executable, type).toBeTruthy();
      if (installed(tool.executable)) expect(availability, type).toEqual({ status: 'ready', reason: null, installHint: null });
      else {
        expect(availability, type).toEqual({
          status: 'tool_missing', installHint: tool.install,
          reason: `${tool.name} (\`${tool.executable}\`) is not installed on this machine: it is not on /usr/local/bin:/usr/bin:/bin.`,
        });
      }
    }
    expect(types.alpha_local.tool).toEqual({ name: 'Claude Code', executable: 'claude', install: 'npm install -g @anthropic-ai/claude-code' });
  });

  it('marks the local tools unavailable, naming the plugin to enable, while coding-agents is disabled', async () => {
    const disabled = await t.api.post('/api/plugins/coding-agents/disable', {});
    expect(disabled.status, disabled.text).toBe(200);
    const types = await catalog();
    expect(types.alpha_local.availability).toEqual({
      status: 'unavailable',
      reason: 'No enabled plugin runs it: it comes with the coding-agents plugin, which is disabled.',
      installHint: 'Enable the coding-agents plugin (Plugins page, or keel plugin enable coding-agents).',
    });
    expect(types.process.availability.status).toBe('ready');
    const enabled = await t.api.post('/api/plugins/coding-agents/enable', {});
    expect(enabled.status, enabled.text).toBe(200);
    expect((await catalog()).alpha_local.availability.status).not.toBe('unavailable');
  });
});
