import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, boardToken, insertUser } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';

/**
 * Plugin streams are scoped like routes: an event published by a call that serves a company
 * reaches only subscribers of that company's channel, who must have access to the company;
 * events of calls that serve no company reach only instance admins. A publish in one Keel
 * process reaches subscribers connected to another.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/ui-bridge', import.meta.url));
let t: TestKernel;
let second: PeerKernel;
let admin: string;
let memberOfA: string;
let companyA: string;
let companyB: string;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  const adminId = await insertUser(t, { admin: true });
  admin = await boardToken(t, adminId);
  const api = t.api.as(admin);
  expect((await api.post('/api/plugins/install', { localPath: FIXTURE })).status).toBe(201);
  expect((await api.post('/api/plugins/ui-bridge/enable', {})).status).toBe(200);
  companyA = (await api.post('/api/companies', { name: 'Stream A' })).body.id;
  companyB = (await api.post('/api/companies', { name: 'Stream B' })).body.id;
  const memberId = await insertUser(t);
  await addMember(t, companyA, memberId);
  memberOfA = await boardToken(t, memberId);
  second = await startPeerKernel(t, { deploymentMode: 'authenticated' });
});
afterAll(async () => {
  await second?.stop();
  await t?.stop();
});

/** Subscribes and collects the data lines of one stream until `stop`. */
async function subscribe(base: string, token: string, query = '') {
  const controller = new AbortController();
  const response = await fetch(`${base}/api/plugins/ui-bridge/bridge/stream/updates${query}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  const events: any[] = [];
  let opened!: () => void;
  const open = new Promise<void>((resolve) => { opened = resolve; });
  const waiters: Array<() => void> = [];
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => { closed = resolve; });
  if (response.status === 200) {
    void (async () => {
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value);
          if (text.includes('event: open')) opened();
          for (const match of text.matchAll(/^data: (\{"pinged".*)$/gm)) events.push(JSON.parse(match[1]!));
          text = text.slice(text.lastIndexOf('\n') + 1);
          for (const wake of waiters.splice(0)) wake();
        }
      } catch { /* aborted */ }
      closed();
    })();
    await open;
  }
  return {
    status: response.status,
    body: response.status === 200 ? null : await response.json(),
    events,
    next: () => new Promise<void>((resolve) => waiters.push(resolve)),
    /** Resolves when the server ends the stream (or it is stopped). */
    ended,
    stop: () => controller.abort(),
  };
}

const ping = (companyId: string | undefined, n: number) => t.api.as(admin).post('/api/plugins/ui-bridge/actions/ping', { ...(companyId ? { companyId } : {}), params: { n } });

describe('plugin streams', () => {
  it('refuse a board user the channel of a company they cannot access, and the instance channel unless they are an admin', async () => {
    const foreign = await subscribe(t.url, memberOfA, `?companyId=${companyB}`);
    expect(foreign.status).toBe(403);
    const instance = await subscribe(t.url, memberOfA);
    expect(instance.status).toBe(403);
    expect(instance.body.code).toBe('instance_admin_required');
  });

  it('deliver an event only to subscribers of the company the publishing call served', async () => {
    const ofA = await subscribe(t.url, memberOfA, `?companyId=${companyA}`);
    const ofB = await subscribe(t.url, admin, `?companyId=${companyB}`);
    const ofInstance = await subscribe(t.url, admin);
    expect([ofA.status, ofB.status, ofInstance.status]).toEqual([200, 200, 200]);
    const arrivedA = ofA.next();
    expect((await ping(companyA, 1)).body).toEqual({ published: true });
    await arrivedA;
    const arrivedInstance = ofInstance.next();
    await ping(undefined, 2);
    await arrivedInstance;
    const arrivedB = ofB.next();
    await ping(companyB, 3);
    await arrivedB;
    expect(ofA.events.map((e) => e.input.params.n)).toEqual([1]);
    expect(ofA.events[0].company).toBe(companyA);
    expect(ofB.events.map((e) => e.input.params.n)).toEqual([3]);
    expect(ofInstance.events.map((e) => e.input.params.n)).toEqual([2]);
    for (const s of [ofA, ofB, ofInstance]) s.stop();
  });

  it('reach a subscriber connected to another Keel process, once', async () => {
    await expect.poll(async () => (await second.api.as(admin).get('/api/plugins/ui-bridge/health')).body.worker?.status, { timeout: 15_000 }).toBe('running');
    const there = await subscribe(second.url, memberOfA, `?companyId=${companyA}`);
    expect(there.status).toBe(200);
    const arrived = there.next();
    await ping(companyA, 4);
    await arrived;
    await ping(companyA, 5);
    while (there.events.length < 2) await there.next();
    expect(there.events.map((e) => e.input.params.n)).toEqual([4, 5]);
    there.stop();
  });

  it('end when the plugin is disabled, on every process; a stream from before hears nothing once it is enabled again', async () => {
    const api = t.api.as(admin);
    const secondServes = () => expect.poll(async () => (await second.api.as(admin).get('/api/plugins/ui-bridge/health')).body.worker?.status, { timeout: 15_000 }).toBe('running');
    await secondServes();
    const here = await subscribe(t.url, memberOfA, `?companyId=${companyA}`);
    const there = await subscribe(second.url, memberOfA, `?companyId=${companyA}`);
    expect([here.status, there.status]).toEqual([200, 200]);
    expect((await api.post('/api/plugins/ui-bridge/disable', {})).status).toBe(200);
    // The server ends both: this process when it disables, the other as it follows the change.
    await Promise.all([here.ended, there.ended]);
    expect((await api.post('/api/plugins/ui-bridge/enable', {})).status).toBe(200);
    await secondServes();
    // New streams hear the plugin enabled again; the old ones were closed and hear nothing.
    const freshHere = await subscribe(t.url, memberOfA, `?companyId=${companyA}`);
    const freshThere = await subscribe(second.url, memberOfA, `?companyId=${companyA}`);
    const arrived = Promise.all([freshHere.next(), freshThere.next()]);
    expect((await ping(companyA, 6)).body).toEqual({ published: true });
    await arrived;
    expect([freshHere.events.map((e) => e.input.params.n), freshThere.events.map((e) => e.input.params.n)]).toEqual([[6], [6]]);
    expect([here.events.map((e) => e.input.params.n), there.events.map((e) => e.input.params.n)]).toEqual([[], []]);
    freshHere.stop();
    freshThere.stop();
  });
});
