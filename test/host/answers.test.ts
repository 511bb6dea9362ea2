import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, boardToken, insertUser } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { expectValidDocument } from '../support/openapi.ts';

/**
 * Raw and streamed answers of plugin routes: declared raw text types with the kernel's
 * framing, server-sent events one-shot (MCP Streamable HTTP) or held on a channel of the
 * request's company, and the attacks on them.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/answers-fx', import.meta.url));
let t: TestKernel;
let second: PeerKernel;
let admin: string;
let memberOfA: string;
let memberOfB: string;
let companyA: string;
let companyB: string;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  admin = await boardToken(t, await insertUser(t, { admin: true }));
  const api = t.api.as(admin);
  expect((await api.post('/api/plugins/install', { localPath: FIXTURE })).status).toBe(201);
  expect((await api.post('/api/plugins/answers-fx/enable', {})).status).toBe(200);
  companyA = (await api.post('/api/companies', { name: 'Answers A' })).body.id;
  companyB = (await api.post('/api/companies', { name: 'Answers B' })).body.id;
  const a = await insertUser(t);
  await addMember(t, companyA, a);
  memberOfA = await boardToken(t, a);
  const b = await insertUser(t);
  await addMember(t, companyB, b);
  memberOfB = await boardToken(t, b);
  second = await startPeerKernel(t, { deploymentMode: 'authenticated' });
});
afterAll(async () => {
  await second?.stop();
  await t?.stop();
});

const base = '/api/plugins/answers-fx';
const get = (path: string, token: string | null = admin, headers: Record<string, string> = {}, url = t.url) =>
  fetch(`${url}${base}${path}`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

/** An open event stream: collects frames (as parsed {event, id, data}) until stopped. */
async function open(path: string, token: string | null, url = t.url, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(`${url}${base}${path}`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const frames: Array<{ event?: string; id?: string; data: any }> = [];
  const waiters: Array<() => void> = [];
  let closed!: () => void;
  /** Resolves when the server ends the stream (or it is stopped). */
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
          let end;
          while ((end = text.indexOf('\n\n')) >= 0) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            const frame: any = {};
            for (const line of block.split('\n')) {
              if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
              else if (line.startsWith('event: ')) frame.event = line.slice(7);
              else if (line.startsWith('id: ')) frame.id = line.slice(4);
            }
            if ('data' in frame) frames.push(frame);
          }
          for (const wake of waiters.splice(0)) wake();
        }
      } catch { /* aborted */ }
      closed();
    })();
  }
  const until = async (count: number) => { while (frames.length < count) await new Promise<void>((resolve) => waiters.push(resolve)); };
  return { response, frames, until, ended, stop: () => controller.abort(), body: response.status === 200 ? null : await response.json() };
}

const publish = (companyId: string, n: number) => t.api.as(admin).post(`${base}/companies/${companyId}/publish`, { n });

describe('raw answers', () => {
  it('send a string body as the declared type, with charset, length, nosniff and a sandboxing CSP', async () => {
    const response = await get(`/companies/${companyA}/notes.md`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toBe(`# Notes of ${companyA}\n\n- first\n`);
    expect(response.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toContain('sandbox');
  });

  it('let the handler pick another declared type, with a checked Content-Disposition', async () => {
    const response = await get(`/companies/${companyA}/notes.md?format=csv`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="notes.csv"');
    expect(await response.text()).toBe('n,text\n1,"hello"\n');
  });

  it('still answer errors as the JSON error body (another company, no credentials)', async () => {
    const foreign = await get(`/companies/${companyB}/notes.md`, memberOfA);
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('content-type')).toContain('application/json');
    expect((await foreign.json()).code).toBeTypeOf('string');
    const anonymous = await get(`/companies/${companyA}/notes.md`, null);
    expect(anonymous.status).toBe(401);
  });

  it('keep a string JSON on a route that declares no raw type, and refuse a raw type or events it did not declare', async () => {
    const string = await get('/plain/string');
    expect(string.headers.get('content-type')).toContain('application/json');
    expect(await string.json()).toBe('# not raw');
    for (const how of ['typed', 'events']) {
      const response = await get(`/plain/${how}`);
      expect(response.status).toBe(502);
      expect((await response.json()).code).toBe('plugin_invalid_response');
    }
  });

  it('refuse at install a manifest declaring a type a browser would run', async () => {
    const { mkdtemp, cp, readFile, writeFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    for (const type of ['text/html', 'image/svg+xml', 'application/javascript', 'application/xml']) {
      const folder = await mkdtemp(join(tmpdir(), 'answers-html-'));
      await cp(FIXTURE, folder, { recursive: true });
      const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
      manifest.key = 'answers-html';
      manifest.routes[0].response.contentTypes = [type];
      await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
      const response = await t.api.as(admin).post('/api/plugins/install', { localPath: folder });
      expect(response.status).toBe(422);
      expect(JSON.stringify(response.body)).toContain('routes.0.response.contentTypes');
    }
  });
});

describe('attacks on answers', () => {
  it('refuse header injection, an undeclared content type and forged event fields with 502, and keep the kernel\'s own headers', async () => {
    for (const how of ['header-crlf', 'undeclared-type', 'disposition', 'event-name', 'event-id', 'stream-company']) {
      const response = await get(`/companies/${companyA}/misbehave/${how}`);
      expect(response.status, how).toBe(how === 'stream-company' ? 200 : 502);
      if (how === 'stream-company') {
        // The plugin's companyId is ignored: the stream is held in the request's company (A).
        response.body?.cancel();
        continue;
      }
      expect(response.headers.get('set-cookie'), how).toBeNull();
      expect((await response.json()).code, how).toBe('plugin_invalid_response');
    }
    const sniff = await get(`/companies/${companyA}/misbehave/sniff`);
    expect(sniff.status).toBe(200);
    expect(sniff.headers.get('x-content-type-options')).toBe('nosniff');
    expect(sniff.headers.get('x-request-id')).not.toBe('forged');
  });

  it('send event data with line breaks as one JSON line, so no field can be forged', async () => {
    const response = await get(`/companies/${companyA}/misbehave/events-data`);
    const text = await response.text();
    expect(text).toBe(`data: ${JSON.stringify('line one\nline two\r\ndata: forged')}\n\n`);
  });

  it('refuse a stream to an unauthenticated client and to a member of another company, before the isolate runs', async () => {
    const anonymous = await open(`/companies/${companyA}/live`, null);
    expect(anonymous.response.status).toBe(401);
    const foreign = await open(`/companies/${companyA}/live`, memberOfB);
    expect(foreign.response.status).toBe(403);
    expect(foreign.response.headers.get('content-type')).toContain('application/json');
  });

  it('refuse an instance stream to a board user who is not an instance admin', async () => {
    const member = await open('/instance-live', memberOfA);
    expect(member.response.status).toBe(403);
    expect(member.body.code).toBe('instance_admin_required');
  });

  it('bound held streams per plugin and company (429 JSON), and free a place when a client leaves', async () => {
    const first = await open(`/companies/${companyB}/live`, memberOfB);
    const secondStream = await open(`/companies/${companyB}/live`, admin);
    expect([first.response.status, secondStream.response.status]).toEqual([200, 200]);
    const flood = await open(`/companies/${companyB}/live`, memberOfB);
    expect(flood.response.status).toBe(429);
    expect(flood.body.code).toBe('stream_limit_reached');
    // Company A's streams are counted apart.
    const other = await open(`/companies/${companyA}/live`, memberOfA);
    expect(other.response.status).toBe(200);
    other.stop();
    first.stop();
    await expect.poll(async () => {
      const again = await open(`/companies/${companyB}/live`, memberOfB);
      again.stop();
      return again.response.status;
    }, { timeout: 10_000 }).toBe(200);
    secondStream.stop();
  });
});

describe('held streams', () => {
  it('send the initial events, then relay only the request company\'s publishes', async () => {
    const ofA = await open(`/companies/${companyA}/live`, memberOfA, t.url, { 'last-event-id': '41' });
    const ofB = await open(`/companies/${companyB}/live`, memberOfB);
    expect(ofA.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(ofA.response.headers.get('x-content-type-options')).toBe('nosniff');
    await ofA.until(1);
    expect(ofA.frames[0]).toEqual({ event: 'hello', id: '42', data: { companyId: companyA, resumedAfter: 41 } });
    await ofB.until(1);
    await publish(companyB, 7);
    await ofB.until(2);
    await publish(companyA, 1);
    await ofA.until(2);
    expect(ofA.frames.slice(1).map((f) => f.data)).toEqual([{ n: 1, companyId: companyA }]);
    expect(ofB.frames.slice(1).map((f) => f.data)).toEqual([{ n: 7, companyId: companyB }]);
    ofA.stop();
    ofB.stop();
  });

  it('reach a client connected to another Keel process', async () => {
    await expect.poll(async () => (await second.api.as(admin).get('/api/plugins/answers-fx/health')).body.worker?.status, { timeout: 15_000 }).toBe('running');
    const there = await open(`/companies/${companyA}/live`, memberOfA, second.url);
    expect(there.response.status).toBe(200);
    await there.until(1);
    await publish(companyA, 2);
    await publish(companyA, 3);
    await there.until(3);
    expect(there.frames.slice(1).map((f) => f.data.n)).toEqual([2, 3]);
    there.stop();
  });

  it('end when the plugin is disabled or upgraded, on every process; one from before hears nothing after', async () => {
    const api = t.api.as(admin);
    const secondServes = () => expect.poll(async () => (await second.api.as(admin).get('/api/plugins/answers-fx/health')).body.worker?.status, { timeout: 15_000 }).toBe('running');
    await secondServes();
    const here = await open(`/companies/${companyA}/live`, memberOfA);
    const there = await open(`/companies/${companyA}/live`, memberOfA, second.url);
    await Promise.all([here.until(1), there.until(1)]);
    expect((await api.post(`${base}/disable`, {})).status).toBe(200);
    await Promise.all([here.ended, there.ended]);
    expect((await api.post(`${base}/enable`, {})).status).toBe(200);
    await secondServes();
    // An upgrade restarts the plugin: its streams end as well.
    const beforeUpgrade = await open(`/companies/${companyA}/live`, memberOfA);
    await beforeUpgrade.until(1);
    expect((await api.post(`${base}/upgrade`, {})).status).toBe(200);
    await beforeUpgrade.ended;
    const fresh = await open(`/companies/${companyA}/live`, memberOfA);
    await fresh.until(1);
    await publish(companyA, 9);
    await fresh.until(2);
    expect(fresh.frames.slice(1).map((f) => f.data.n)).toEqual([9]);
    for (const old of [here, there, beforeUpgrade]) expect(old.frames.slice(1)).toEqual([]);
    fresh.stop();
  });
});

describe('MCP Streamable HTTP shapes', () => {
  const post = (body: unknown, accept: string) => fetch(`${t.url}${base}/companies/${companyA}/mcp`, {
    method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', accept }, body: JSON.stringify(body),
  });

  it('answer a request with JSON, or with a one-shot event stream when the client accepts one', async () => {
    const json = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'application/json');
    expect(json.status).toBe(200);
    expect(json.headers.get('mcp-session-id')).toBe('session-1');
    expect(await json.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { method: 'tools/list' } });
    const sse = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call' }, 'application/json, text/event-stream');
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(sse.headers.get('mcp-session-id')).toBe('session-1');
    const text = await sse.text();
    expect(text).toBe(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } })}\n\nid: 1\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 2, result: { method: 'tools/call' } })}\n\n`);
  });

  it('answer a notification with 202 and no body', async () => {
    const response = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, 'application/json, text/event-stream');
    expect(response.status).toBe(202);
    expect(await response.text()).toBe('');
  });
});

describe('OpenAPI', () => {
  it('describe the declared answer types of plugin routes', async () => {
    const document = (await t.api.as(admin).get('/api/openapi.json')).body;
    await expectValidDocument(document);
    const notes = document.paths[`${base}/companies/{companyId}/notes.md`].get.responses['200'].content;
    expect(Object.keys(notes).sort()).toEqual(['application/json', 'text/csv', 'text/markdown']);
    const live = document.paths[`${base}/companies/{companyId}/live`].get.responses;
    expect(Object.keys(live['200'].content)).toContain('text/event-stream');
    expect(live['429']).toBeDefined();
  });
});
