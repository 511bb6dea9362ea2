import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { installAndEnable, pluginVariant } from '../../support/plugins.ts';
import { runWhen, startRuntimeWorld, wakeOk } from './helpers.ts';

/**
 * An adapter type contributed by a plugin the runtime does not name: the kernel says who
 * contributes a type (the plugin it registered for agent.adapter-config with that type), the
 * runtime calls that plugin's adapter-run because it declares the runtime's contract, and only
 * that plugin may report the run's end.
 */
const FAKE = fileURLToPath(new URL('./fixtures/fake-adapter', import.meta.url));
const IMPOSTOR = fileURLToPath(new URL('./fixtures/adapter-impostor', import.meta.url));

let t: TestKernel;
let company: any;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Contributed Co'));
  await installAndEnable(t, FAKE);
  await installAndEnable(t, IMPOSTOR);
});
afterAll(async () => { await t?.stop(); });

const finish = (plugin: string, route: string, body: Record<string, unknown>) => t.api.post(`/api/plugins/${plugin}/companies/${company.id}/${route}`, body);

describe('an adapter type a third-party plugin contributes', () => {
  it('is validated by its plugin, started through its adapter-run and ended by its report', async () => {
    const refused = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'No label', role: 'engineer', adapterType: 'fake_gateway', adapterConfig: {} });
    expect([refused.status, refused.body.code]).toEqual([422, 'invalid_adapter_config']);

    const agent = await createAgent(t.api, company.id, { adapterType: 'fake_gateway', adapterConfig: { label: 'one', extra: 'dropped' } });
    expect(agent.adapterConfig).toEqual({ label: 'one' });
    const { run: queued } = await wakeOk(t.api, agent.id, { reason: 'contributed' });
    const running = await runWhen(t, queued.id, (run) => run.status === 'running');
    expect(running.executionId).toBe(queued.id);

    const done = await finish('fake-adapter', 'finish', { runId: queued.id, executionId: running.executionId });
    expect([done.status, done.body]).toEqual([200, { ok: true }]);
    const ended = await runWhen(t, queued.id, (run) => run.status === 'succeeded');
    expect(ended.resultJson).toEqual({ by: 'fake-adapter' });
  });

  it('cannot be reported by a plugin that does not contribute it (404, the run is unchanged)', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'fake_gateway', adapterConfig: { label: 'two' } });
    const { run: queued } = await wakeOk(t.api, agent.id);
    const running = await runWhen(t, queued.id, (run) => run.status === 'running');
    const forged = await finish('adapter-impostor', 'report', { runId: queued.id, executionId: running.executionId });
    expect([forged.status, forged.body.code]).toEqual([404, 'run_not_found']);
    expect((await t.api.get(`/api/heartbeat-runs/${queued.id}`)).body.status).toBe('running');
    await finish('fake-adapter', 'finish', { runId: queued.id, executionId: running.executionId });
    await runWhen(t, queued.id, (run) => run.status === 'succeeded');
  });

  it('is not started through an adapter-run that does not declare the runtime\'s contract: the run fails service_not_declared', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'bare_gateway', adapterConfig: {} });
    const { run: queued } = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, queued.id, (found) => found.status === 'failed');
    expect(run.errorCode).toBe('service_not_declared');
  });

  it('another plugin declaring a contract of the same name cannot call a provider that implements the runtime\'s', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'fake_gateway', adapterConfig: { label: 'borrowed' } });
    const res = await finish('adapter-impostor', 'borrow', { runId: '00000000-0000-4000-8000-000000000000', agentId: agent.id });
    expect([res.status, res.body.code]).toEqual([403, 'service_not_declared']);
    expect(res.body.error).toContain('contractOf');
  });

  it('a type nobody contributes is refused at wake (adapter_unavailable)', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'nobody_gateway', adapterConfig: {} });
    const res = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect([res.status, res.body.code]).toEqual([409, 'adapter_unavailable']);
  });

  it('a type two plugins claim is refused at wake (adapter_type_contested) until one is disabled', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'fake_gateway', adapterConfig: { label: 'three' } });
    const rival = await pluginVariant(IMPOSTOR, (manifest) => {
      manifest.key = 'adapter-rival';
      manifest.kernelPoints[0].adapterTypes = ['fake_gateway'];
    });
    await installAndEnable(t, rival);
    const res = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect([res.status, res.body.code]).toEqual([409, 'adapter_type_contested']);
    expect(res.body.error).toContain('adapter-rival, fake-adapter');
    expect((await t.api.post('/api/plugins/adapter-rival/disable', {})).status).toBe(200);
    await wakeOk(t.api, agent.id);
  });
});
