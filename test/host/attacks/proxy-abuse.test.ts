import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { installAndEnable, pluginVariant } from '../../support/plugins.ts';
import { startAnthropicModel } from '../../support/scripted-models/anthropic.ts';
import { waitFor } from '../../support/wait-for.ts';
import {
  anthropicFrame, COMPANY_KEY, deferred, finishedEvent, PROXY_FX, proxyCall, RATES, readUntil, startProxySetup, startUpstream, type ProxySetup,
} from '../../support/proxy-fx.ts';

/**
 * Attacks on proxy answers through the real server: a stream that crosses its limit (cut), a
 * provider that never ends, a client that leaves, targets the kernel must not reach, bodies too
 * large or not JSON, a plugin without http.proxy, another company's key, a process that dies
 * holding a call, and a second plugin listening for the events of the first.
 */
let s: ProxySetup;
beforeAll(async () => { s = await startProxySetup(); });
afterAll(async () => { await s?.t.stop(); });

const fx = (extra: Record<string, unknown>) => ({ secretId: s.secretId, rates: RATES, limitCents: null, ...extra });
const callRows = async () => (await s.t.sql.query('select count(*)::int as n from proxied_calls')).rows[0].n as number;
const delta = (text: string) => anthropicFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });

describe('the cut', () => {
  it('closes the provider connection once the running cost crosses limitCents and ends the client stream with an error event in the wire shape', async () => {
    const never = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(anthropicFrame({ type: 'message_start', message: { model: 'claude-cut', usage: { input_tokens: 10, output_tokens: 1 } } }));
      // 4000 characters: about 1000 output tokens, 1.5 cents at 1500 cents per MTok.
      for (let i = 0; i < 4; i++) res.write(delta('x'.repeat(1000)));
      await never.promise;
    });
    try {
      const res = await proxyCall(s, { model: 'claude-cut', stream: true, fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', limitCents: 1, cutMessage: 'Budget of agent exhausted', tag: 'cut' }) });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('event: error\ndata: {"type":"error","error":{"type":"permission_error","message":"Budget of agent exhausted"}}\n\n');
      expect(text.endsWith('\n\n')).toBe(true);
      await upstream.requests[0]!.closed;
      const event = await finishedEvent(s, 'cut');
      expect(event).toMatchObject({ status: 'cut', usageEstimated: true, model: 'claude-cut' });
      expect(event.usage.inputTokens).toBe(10);
      expect(event.usage.outputTokens).toBeGreaterThan(0);
      expect(event.costCents).toBeGreaterThanOrEqual(1);
    } finally {
      never.resolve();
      await upstream.close();
    }
  });

  it('delivers a non-streamed answer over the limit (it is already spent) and meters it', async () => {
    const model = await startAnthropicModel(() => ({ text: 'expensive', usage: { inputTokens: 1_000_000, outputTokens: 10 } }), { apiKey: COMPANY_KEY });
    try {
      const res = await proxyCall(s, { model: 'claude-x', max_tokens: 10, messages: [], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', limitCents: 1, tag: 'over-json' }) });
      expect(res.status).toBe(200);
      expect((await res.json()).content[0].text).toBe('expensive');
      expect(await finishedEvent(s, 'over-json')).toMatchObject({ status: 'completed', costCents: 301 });
    } finally {
      await model.close();
    }
  });
});

describe('exchanges that do not end on their own', () => {
  it('ends a stream the provider never finishes once it has been silent for idleTimeoutMs', async () => {
    const model = await startAnthropicModel(() => ({ hang: true }), { apiKey: COMPANY_KEY });
    try {
      const res = await proxyCall(s, { model: 'claude-hang', max_tokens: 10, stream: true, messages: [], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', idleTimeoutMs: 300, tag: 'idle' }) });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('message_start');
      expect(await finishedEvent(s, 'idle')).toMatchObject({ status: 'timed_out', usageEstimated: true });
    } finally {
      await model.close();
    }
  });

  it('stops the provider when the client goes away mid-stream, metered by what was delivered', async () => {
    const never = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(anthropicFrame({ type: 'message_start', message: { model: 'claude-gone', usage: { input_tokens: 25, output_tokens: 1 } } }));
      res.write(delta('12345678'));
      await never.promise;
    });
    try {
      const abort = new AbortController();
      const res = await proxyCall(s, { model: 'claude-gone', stream: true, fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'gone' }) }, { signal: abort.signal });
      const reader = res.body!.getReader();
      await readUntil(reader, (text) => text.includes('12345678'));
      abort.abort();
      await upstream.requests[0]!.closed;
      expect(await finishedEvent(s, 'gone')).toMatchObject({ status: 'client_gone', usageEstimated: true, usage: { inputTokens: 25, outputTokens: 2 } });
    } finally {
      never.resolve();
      await upstream.close();
    }
  });

  it('keeps renewing the lease of a call whose provider has not answered yet (a long answer that does not stream)', async () => {
    const gate = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      await gate.promise;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ model: 'claude-slow', usage: { input_tokens: 5, output_tokens: 6 } }));
    });
    try {
      const answer = proxyCall(s, { model: 'claude-slow', fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'slow' }) });
      const row = await waitFor(async () => (await s.t.sql.query(`select id from proxied_calls where report->>'tag' = 'slow'`)).rows[0], 'the live row');
      await s.t.sql.query(`update proxied_calls set lease_until = now() - interval '1 minute' where id = $1`, [row.id]);
      const gateway = s.t.kernel.services.gateway;
      await gateway.calls.heartbeat();
      await gateway.calls.sweep();
      expect((await s.t.sql.query('select status, lease_until > now() as leased from proxied_calls where id = $1', [row.id])).rows[0]).toEqual({ status: 'running', leased: true });
      gate.resolve();
      const res = await answer;
      expect(res.status).toBe(200);
      await res.text();
      expect(await finishedEvent(s, 'slow')).toMatchObject({ status: 'completed', usage: { inputTokens: 5, outputTokens: 6 } });
    } finally {
      gate.resolve();
      await upstream.close();
    }
  });

  it('turns a call whose lease ran out into lost, with its last checkpoint, once', async () => {
    const never = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(anthropicFrame({ type: 'message_start', message: { model: 'claude-lost', usage: { input_tokens: 40, output_tokens: 1 } } }));
      await never.promise;
    });
    try {
      const res = await proxyCall(s, { model: 'claude-lost', stream: true, fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'lost' }) });
      const reader = res.body!.getReader();
      await readUntil(reader, (text) => text.includes('message_start'));
      const gateway = s.t.kernel.services.gateway;
      await gateway.calls.heartbeat();
      // The owner stops renewing (as a dead process would): its lease is in the past.
      const { rows } = await s.t.sql.query(`update proxied_calls set lease_until = now() - interval '1 minute' where status = 'running' and report->>'tag' = 'lost' returning id`);
      expect(rows).toHaveLength(1);
      await gateway.calls.sweep();
      const event = await finishedEvent(s, 'lost');
      expect(event).toMatchObject({ status: 'lost', usageEstimated: true, callId: rows[0].id, usage: { inputTokens: 40 } });
      // The owner's own end later changes nothing and sends nothing more.
      await reader.cancel();
      await upstream.requests[0]!.closed;
      const row = await waitFor(async () => (await s.t.sql.query(`select status from proxied_calls where id = $1`, [rows[0].id])).rows[0], 'the row');
      expect(row.status).toBe('lost');
      const events = (await s.t.api.get('/api/plugins/proxy-fx/finished')).body.filter((e: any) => e.report.tag === 'lost');
      expect(events).toHaveLength(1);
    } finally {
      never.resolve();
      await upstream.close();
    }
  });
});

describe('refusals, before anything is forwarded', () => {
  it('refuses targets the kernel must not reach: http to an unlisted host, a private address, credentials in the URL', async () => {
    const before = await callRows();
    const targets = ['http://example.com/v1/messages', 'https://10.1.2.3/v1/messages', 'https://169.254.169.254/latest', 'http://user:pass@127.0.0.1:9/v1/messages', 'https://[::1]/v1', 'ftp://127.0.0.1/'];
    for (const url of targets) {
      const res = await proxyCall(s, { model: 'm', fx: fx({ url, meter: 'anthropic', tag: 'refused' }) });
      const body = await res.json();
      expect(res.status, url).toBe(502);
      expect(body.code, url).toBe('proxy_target_denied');
      expect(JSON.stringify(body)).not.toContain(COMPANY_KEY);
    }
    expect(await callRows()).toBe(before);
    const check = async (url: string) => (await s.t.api.post('/api/plugins/proxy-fx/check', { url })).body;
    expect(await check('http://127.0.0.1:8080')).toEqual({ ok: true, reason: null });
    expect(await check('https://10.1.2.3')).toMatchObject({ ok: false });
    expect(await check('http://203.0.113.9')).toMatchObject({ ok: false });
    expect(await check('https://127.0.0.1/v1?x=1')).toMatchObject({ ok: false });
  });

  it('refuses a body over maxBodyBytes with 413 and one that is not JSON with 400, before the plugin runs', async () => {
    const before = await callRows();
    const big = await proxyCall(s, { model: 'm', padding: 'x'.repeat(70_000), fx: { answer: 'json' } });
    expect(big.status).toBe(413);
    expect((await big.json()).code).toBe('payload_too_large');
    const notJson = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': s.agentKey }, body: '{"model": ' });
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).code).toBe('validation_failed');
    expect(await callRows()).toBe(before);
  });

  it('lets the plugin refuse a caller without a Keel credential in its own shape, and never forwards it', async () => {
    const upstream = await startUpstream((_req, res) => { res.writeHead(200); res.end('{}'); });
    try {
      for (const headers of [{ 'x-api-key': 'sk-not-a-keel-key' }, { 'x-api-key': '' }, { authorization: 'Bearer nope' }] as Array<Record<string, string>>) {
        const res = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic' }) }) });
        expect(res.status, JSON.stringify(headers)).toBe(401);
        const body = await res.json();
        expect(body.error.type).toBe('authentication_error');
        // A credential header that is no Keel credential makes the caller anonymous, not the local board of local_trusted.
        if (headers['x-api-key']) expect(body.caller).toBe('system:anonymous');
      }
      const none = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fx: { answer: 'json' } }) });
      expect(none.status).toBe(401);
      expect((await none.json()).caller).toMatch(/^user:/);
      // An ended run's token: the kernel resolves nobody, the plugin answers its 401.
      const { runs, db } = s.t.kernel.services;
      const opened = await db.transaction((tx) => runs.open(tx, { agentId: s.agent.id, companyId: s.company.id, invocationSource: 'on_demand' }));
      const token = opened.token;
      await db.transaction((tx) => runs.close(tx, opened.run.runId, { status: 'succeeded' }));
      for (const headers of [{ 'x-api-key': token }, { authorization: `Bearer ${token}` }] as Array<Record<string, string>>) {
        const res = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic' }) }) });
        expect(res.status, Object.keys(headers)[0]).toBe(401);
        expect((await res.json()).error.type, Object.keys(headers)[0]).toBe('authentication_error');
      }
      expect(upstream.requests).toHaveLength(0);
    } finally {
      await upstream.close();
    }
  });

  it('never resolves a secret of another company', async () => {
    const other = await createCompany(s.t.api);
    const foreign = await s.t.api.post(`/api/companies/${other.id}/secrets`, { name: 'theirs', value: 'sk-other-company-secret' });
    expect(foreign.status).toBe(201);
    const upstream = await startUpstream((_req, res) => { res.writeHead(200); res.end('{}'); });
    try {
      const before = await callRows();
      const res = await proxyCall(s, { model: 'm', fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', secretId: foreign.body.id }) });
      const body = await res.json();
      expect(res.status).toBe(502);
      expect(body.code).toBe('proxy_credential_unavailable');
      expect(JSON.stringify(body)).not.toContain('sk-other-company-secret');
      expect(upstream.requests).toHaveLength(0);
      expect(await callRows()).toBe(before);
    } finally {
      await upstream.close();
    }
  });

  it('refuses a proxy answer from a route that does not declare proxy, of a plugin without http.proxy (502 plugin_invalid_response), forwarding nothing', async () => {
    const folder = await pluginVariant(PROXY_FX, (manifest) => {
      manifest.key = 'proxy-fx-plain';
      manifest.database.namespace = 'proxyfx_plain';
      manifest.capabilities = manifest.capabilities.filter((capability: { id: string }) => capability.id !== 'http.proxy');
      delete manifest.routes[0].proxy;
    });
    const key = await installAndEnable(s.t, folder);
    const upstream = await startUpstream((_req, res) => { res.writeHead(200); res.end('{}'); });
    try {
      const before = await callRows();
      const res = await fetch(`${s.t.url}/api/plugins/${key}/forward/anthropic`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${s.agentKey}` },
        body: JSON.stringify({ fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic' }) }),
      });
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBe(502);
      expect(body.code).toBe('plugin_invalid_response');
      expect(upstream.requests).toHaveLength(0);
      expect(await callRows()).toBe(before);
    } finally {
      await upstream.close();
    }
  });

  it('refuses an invalid proxy spec (a credential header of its own, a report too large) with 502 plugin_invalid_response', async () => {
    const upstream = await startUpstream((_req, res) => { res.writeHead(200); res.end('{}'); });
    try {
      for (const extra of [{ headers: { 'x-api-key': 'mine' } }, { headers: { Authorization: 'Bearer mine' } }, { meter: 'mystery' }, { rates: { inputCentsPerMTok: -1 } }, { tag: 'x'.repeat(9000) }]) {
        const res = await proxyCall(s, { fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', ...extra }) });
        expect(res.status, JSON.stringify(extra)).toBe(502);
        expect((await res.json()).code).toBe('plugin_invalid_response');
      }
      expect(upstream.requests).toHaveLength(0);
    } finally {
      await upstream.close();
    }
  });
});

describe('proxy.finished', () => {
  it('reaches only the plugin that answered the proxy', async () => {
    const folder = await pluginVariant(PROXY_FX, (manifest) => { manifest.key = 'proxy-fx-listener'; manifest.database.namespace = 'proxyfx_listener'; });
    const listener = await installAndEnable(s.t, folder);
    const model = await startAnthropicModel(() => ({ text: 'hi' }), { apiKey: COMPANY_KEY });
    try {
      const res = await proxyCall(s, { model: 'claude-x', max_tokens: 10, messages: [], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', tag: 'only-mine' }) });
      expect(res.status).toBe(200);
      await res.text();
      const event = await finishedEvent(s, 'only-mine');
      // The event is committed with its delivery rows: none was written for the listener.
      const { rows } = await s.t.sql.query(
        `select d.subscriber from keel_events.deliveries d join keel_events.outbox o on o.seq = d.event_seq where o.name = 'proxy.finished' and o.entity_id = $1`, [event.callId]);
      expect(rows.map((row: any) => row.subscriber)).toEqual(['proxy-fx']);
      expect((await s.t.api.get(`/api/plugins/${listener}/finished`)).body).toEqual([]);
      // The listener itself can receive its own calls' events (the check above could fail).
      const own = await fetch(`${s.t.url}/api/plugins/${listener}/forward/anthropic`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': s.agentKey },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 10, messages: [], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', tag: 'listener-own' }) }),
      });
      expect(own.status).toBe(200);
      await own.text();
      await waitFor(async () => (await s.t.api.get(`/api/plugins/${listener}/finished`)).body.length === 1, 'the listener\'s own event');
    } finally {
      await model.close();
    }
  });

  it('gives an agent of another company its own company as the call\'s company', async () => {
    const other = await createCompany(s.t.api);
    const agent = await createAgent(s.t.api, other.id);
    const key = (await s.t.api.post(`/api/agents/${agent.id}/keys`, { name: 'k' })).body.token as string;
    const res = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ fx: { answer: 'json' } }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).companyId).toBe(other.id);
  });
});
