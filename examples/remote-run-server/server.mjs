#!/usr/bin/env node
// A minimal run server for the eta_gateway adapter (docs/api/runtime.md, "The eta_gateway
// adapter"): the four calls of the protocol, no dependencies. Each run "works" for a few seconds,
// streaming text and usage totals, then completes; with the run token it received
// (X-Service-Api-Key) and serviceApiUrl it calls Keel back to say who it is.
//
//   RUN_SERVER_KEY=choose-a-key PORT=8787 node examples/remote-run-server/server.mjs
//
// then give an agent adapterType "eta_gateway" with
// adapterConfig {"apiBaseUrl": "http://127.0.0.1:8787", "apiKey": "choose-a-key"}.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const key = process.env.RUN_SERVER_KEY;
if (!key) { console.error('set RUN_SERVER_KEY to the key Keel will send'); process.exit(1); }
const port = Number(process.env.PORT ?? 8787);
const runs = new Map(); // id -> {id, status, events, listeners, idempotencyKey, timer}
const byKey = new Map(); // Idempotency-Key -> id

const json = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
const lastUsage = (run) => [...run.events].reverse().find((event) => event.event === 'run.usage')?.data ?? null;
const statusOf = (run) => ({ id: run.id, status: run.status, usage: lastUsage(run), ...(run.result ? { result: run.result } : {}) });

function emit(run, event, data) {
  run.events.push({ id: run.events.length + 1, event, data });
  for (const listener of run.listeners) listener();
}

async function work(run, body, token) {
  // The run token is the agent's key for calling Keel back, for as long as the run lasts.
  let name = 'an agent';
  if (body.serviceApiUrl && token) {
    try {
      const res = await fetch(`${body.serviceApiUrl.replace(/\/$/, '')}/api/agents/me`, { headers: { authorization: `Bearer ${token}` } });
      if (res.ok) name = (await res.json()).name;
    } catch { /* Keel not reachable from here: work on anyway */ }
  }
  const words = `Hello from the run server, ${name}. Woken for: ${body.input?.reason ?? 'no reason given'}.`.split(' ');
  let step = 0;
  run.timer = setInterval(() => {
    if (run.status !== 'running') { clearInterval(run.timer); return; }
    if (step < words.length) {
      emit(run, 'run.text', { delta: (step === 0 ? '' : ' ') + words[step] });
      step += 1;
      emit(run, 'run.usage', { provider: 'example', model: 'example-remote', inputTokens: 100 * step, outputTokens: 20 * step, costUsd: 0.001 * step });
      return;
    }
    clearInterval(run.timer);
    run.status = 'succeeded';
    run.result = { text: words.join(' ') };
    emit(run, 'run.completed', statusOf(run));
  }, 300);
}

function stream(req, res, run) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let sent = Number(req.headers['last-event-id'] ?? 0);
  const flush = () => {
    for (; sent < run.events.length; sent += 1) {
      const event = run.events[sent];
      res.write(`id: ${event.id}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
    }
    if (run.status !== 'running') { run.listeners.delete(flush); res.end(); }
  };
  run.listeners.add(flush);
  res.on('close', () => run.listeners.delete(flush));
  flush();
}

const server = createServer(async (req, res) => {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  if (req.headers.authorization !== `Bearer ${key}`) return json(res, 401, { error: 'invalid key' });
  const [, id, action] = /^\/api\/v1\/runs(?:\/([^/]+)(?:\/(events|stop))?)?$/.exec(req.url.split('?')[0]) ?? [];
  if (req.url.split('?')[0] === '/api/v1/runs' && req.method === 'POST') {
    const idempotencyKey = req.headers['idempotency-key'];
    // A repeated create (same key) is the run already started, never a second one.
    if (idempotencyKey && byKey.has(idempotencyKey)) return json(res, 200, statusOf(runs.get(byKey.get(idempotencyKey))));
    // Never reused (not even after a restart): Keel follows one remote run per Keel run.
    const run = { id: `run-${randomUUID()}`, status: 'running', events: [], listeners: new Set(), result: null };
    runs.set(run.id, run);
    if (idempotencyKey) byKey.set(idempotencyKey, run.id);
    console.log(`run ${run.id} for Keel run ${idempotencyKey}, session ${req.headers['x-remote-session-key'] ?? '(none)'}`);
    void work(run, JSON.parse(raw || '{}'), req.headers['x-service-api-key']);
    return json(res, 201, statusOf(run));
  }
  const run = id ? runs.get(decodeURIComponent(id)) : undefined;
  if (!run) return json(res, 404, { error: 'not found' });
  if (action === 'events' && req.method === 'GET') return stream(req, res, run);
  if (action === 'stop' && req.method === 'POST') {
    if (run.status === 'running') { run.status = 'cancelled'; emit(run, 'run.cancelled', statusOf(run)); }
    return json(res, 202, statusOf(run));
  }
  if (!action && req.method === 'GET') return json(res, 200, statusOf(run));
  json(res, 405, { error: 'method not allowed' });
});
server.listen(port, '127.0.0.1', () => console.log(`run server on http://127.0.0.1:${server.address().port}/api`));
