import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { runWhen, startRuntimeWorld, wakeOk } from '../runtime/helpers.ts';

/**
 * The `cursor` adapter through a running Keel, as far as it can be checked without Cursor's CLI
 * (not on npm, not installable here): its configuration's refusals, and a missing tool named
 * with Cursor's installer. What its stream means is tested on the documented example lines
 * (cursor-driver.test.ts); no stand-in plays the tool.
 */
let t: TestKernel;
let company: any;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Cursor Co'));
});
afterAll(async () => { await t?.stop(); });

const ended = (run: any) => ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(run.status) && run.finishedAt !== null;
const cursorAgent = (config: Record<string, unknown> = {}) => createAgent(t.api, company.id, {
  adapterType: 'cursor', adapterConfig: { env: { CURSOR_API_KEY: 'key' }, graceSec: 1, ...config },
});

describe('a cursor agent', { timeout: 120_000 }, () => {
  it('is stored with Cursor\'s default model and executable', async () => {
    const agent = await cursorAgent();
    expect(agent.adapterConfig).toMatchObject({ model: 'auto', command: 'cursor-agent' });
  });

  it('refuses an extra flag that would carry a credential, naming it', async () => {
    const res = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Keyed', adapterType: 'cursor', adapterConfig: { extraArgs: ['--api-key', 'k'] } });
    expect([res.status, res.body.code, res.body.details?.path]).toEqual([422, 'invalid_adapter_config', 'adapterConfig.extraArgs.0']);
    expect(res.body.error).toContain('--mode, --add-dir, --approve-mcps');
    // Nothing was written.
    const agents = (await t.api.get(`/api/companies/${company.id}/agents`)).body as any[];
    expect(agents.map((agent) => agent.name)).not.toContain('Keyed');
  });

  it('fails as not installed, naming Cursor\'s installer, when its command is missing', async () => {
    const agent = await cursorAgent({ command: '/nonexistent/bin/cursor-agent' });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, ended, 60_000);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'adapter_unavailable' });
    expect((await t.api.get(`/api/agents/${agent.id}/runtime-state`)).body.lastError).toContain('curl https://cursor.com/install -fsS | bash');
  });
});
