import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, installAndEnable } from './support.ts';

/** SANDBOX.md class 10: confused deputy through inter-plugin services. */
let t: TestKernel;
let companyA: any;
let companyB: any;
let agentA: any;
let agentB: any;

beforeAll(async () => {
  t = await startTestKernel();
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  agentA = await createAgent(t.api, companyA.id);
  agentB = await createAgent(t.api, companyB.id);
  await installAndEnable(t, 'attack-svc-provider');
  await installAndEnable(t, 'attack-svc-caller');
});
afterAll(async () => { await t?.stop(); });

const call = (companyId: string, body: Record<string, unknown>) => t.api.post(`/api/plugins/attack-svc-caller/companies/${companyId}/call`, body);
const status = async (id: string) => (await t.sql.query('select status from agents where id = $1', [id])).rows[0].status as string;

describe('a plugin without agents.pause', () => {
  it('cannot have a service that requires callers to hold agents.pause pause agents for it', async () => {
    const res = await call(companyA.id, { service: 'pause-agent', input: { agentId: agentA.id } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.error).toMatchObject({ code: 'service_caller_lacks_capability', status: 403 });
    expect(res.body.error.message).toContain('agents.pause');
    expect(await status(agentA.id)).not.toBe('paused');
  });

  it('cannot use a service\'s powers on another company: the service acts for the caller\'s company', async () => {
    const res = await call(companyA.id, { service: 'pause-any', input: { agentId: agentB.id } });
    expect(res.body.error).toMatchObject({ code: 'not_found', status: 404 });
    expect(await status(agentB.id)).not.toBe('paused');
  });

  it('cannot call services it did not declare under services.consumes, nor plugins that offer none', async () => {
    const hidden = await call(companyA.id, { service: 'hidden' });
    expect(hidden.body.error).toMatchObject({ code: 'service_not_declared', status: 403 });
    const other = await call(companyA.id, { plugin: 'attack-svc-caller', service: 'call' });
    expect(other.body.error).toMatchObject({ code: 'service_not_declared' });
  });
});

describe('the callee', () => {
  it('sees which plugin calls and on whose behalf, whatever the input claims', async () => {
    const res = await call(companyA.id, { service: 'whoami', input: { caller: { plugin: 'keel' }, companyId: companyB.id, actor: { type: 'system', id: 'root' } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.value).toEqual({
      caller: { plugin: 'attack-svc-caller' },
      companyId: companyA.id,
      actor: { type: 'user', id: 'local-board', agentId: null },
      kind: 'service',
    });
  });
});

describe('nesting', () => {
  it('refuses service calls nested deeper than the limit', async () => {
    const res = await call(companyA.id, { service: 'recurse', input: { depth: 1 } });
    expect(res.status, res.text).toBe(200);
    let level = res.body.value;
    const depths: number[] = [];
    while (level.next) { depths.push(level.depth); level = level.next; }
    depths.push(level.depth);
    expect(depths).toEqual([1, 2, 3, 4]);
    expect(level.refused).toEqual({ code: 'service_call_depth', status: 508 });
    await expectKernelAlive(t);
  });
});
