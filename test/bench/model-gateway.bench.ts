import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/proxy-fx', import.meta.url));
const ROUNDS = 200;
const WARM_UP = 20;
const CONCURRENT = 50;
const LOAD_SECONDS = 5;

/** A streamed Anthropic answer: message_start, 20 text deltas, message_delta with the usage, message_stop. */
const frame = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
const ANSWER = [
  frame({ type: 'message_start', message: { model: 'claude-bench', usage: { input_tokens: 120, output_tokens: 1 } } }),
  ...Array.from({ length: 20 }, (_, i) => frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `piece ${i} of the answer ` } })),
  frame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 80 } }),
  frame({ type: 'message_stop' }),
];

const client = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One POST, timing the first body byte and the end of the answer from the moment it is sent. */
function timedCall(url: string, headers: Record<string, string>, body: string): Promise<{ firstByte: number; lastByte: number; status: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstByte = -1;
    const req = http.request(url, { method: 'POST', agent: client, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      res.on('data', () => { if (firstByte < 0) firstByte = performance.now() - started; });
      res.on('end', () => resolve({ firstByte, lastByte: performance.now() - started, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;

/**
 * The model gateway's added latency, in one run: the same streamed answer from a local provider
 * called directly and through a proxy route (the fixture plugin decides in its isolate, the
 * kernel forwards with the vault key, meters and records the call), sequentially: first byte
 * and last byte, p50 and p95, and the difference. Then calls per second through the gateway
 * with 50 concurrent streams.
 */
export async function run(): Promise<void> {
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ANSWER[0]);
      // The rest a moment later, as a provider streams: the first byte and the last are apart.
      setImmediate(() => res.end(ANSWER.slice(1).join('')));
    });
  });
  upstream.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1/messages`;
  const kernel = await startKernelProcess({ KEEL_LLM_PRIVATE_NETWORK_HOSTS: '127.0.0.1' });
  try {
    await kernel.call('POST', '/api/plugins/install', { localPath: FIXTURE });
    await kernel.call('POST', '/api/plugins/proxy-fx/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Gateway Bench' });
    const created = await kernel.call('POST', `/api/companies/${company.id}/agents`, { name: 'Bench agent', role: 'engineer', adapterType: 'process', adapterConfig: { command: '/bin/true' } });
    const agentId = created.agent?.id ?? created.id;
    const key = (await kernel.call('POST', `/api/agents/${agentId}/keys`, { name: 'bench' })).token as string;
    const secret = await kernel.call('POST', `/api/companies/${company.id}/secrets`, { name: 'provider', value: 'sk-bench-provider-key' });
    const rates = { inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 };
    const body = JSON.stringify({
      model: 'claude-bench', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Say something.' }],
      fx: { url: upstreamUrl, secretId: secret.id, meter: 'anthropic', rates, limitCents: 1_000_000 },
    });
    const proxied = `${kernel.url}/api/plugins/proxy-fx/forward/anthropic`;
    const auth = { 'x-api-key': key };

    const decisionBody = JSON.stringify({ model: 'claude-bench', fx: { answer: 'json' } });
    const decision: number[] = [];
    const direct: Array<{ firstByte: number; lastByte: number }> = [];
    const through: Array<{ firstByte: number; lastByte: number }> = [];
    for (let i = 0; i < ROUNDS + WARM_UP; i++) {
      // Interleaved, so that both see the same machine.
      const a = await timedCall(upstreamUrl, {}, body);
      const b = await timedCall(proxied, auth, body);
      if (b.status !== 200) throw new Error(`proxied call answered ${b.status}`);
      const c = await timedCall(proxied, auth, decisionBody);
      if (i < WARM_UP) continue;
      direct.push(a);
      through.push(b);
      decision.push(c.lastByte);
    }
    const row = (measure: string, pick: (sample: { firstByte: number; lastByte: number }) => number, p: number) => {
      const d = pct(direct.map(pick), p);
      const g = pct(through.map(pick), p);
      return { measure, direct: `${d.toFixed(2)} ms`, gateway: `${g.toFixed(2)} ms`, added: `${(g - d).toFixed(2)} ms` };
    };
    printTable(`Model gateway: a streamed answer (22 events) directly and through a proxy route (${ROUNDS} sequential calls each)`, [
      row('first byte, p50', (sample) => sample.firstByte, 50),
      row('first byte, p95', (sample) => sample.firstByte, 95),
      row('last byte, p50', (sample) => sample.lastByte, 50),
      row('last byte, p95', (sample) => sample.lastByte, 95),
      // What the plugin's decision alone costs (the same route answering JSON instead of a proxy): part of the added first byte.
      { measure: 'the decision alone (route answering JSON), p50', direct: '', gateway: `${pct(decision, 50).toFixed(2)} ms`, added: '' },
    ]);

    let done = 0;
    let failed = 0;
    const until = performance.now() + LOAD_SECONDS * 1000;
    const latencies: number[] = [];
    await Promise.all(Array.from({ length: CONCURRENT }, async () => {
      while (performance.now() < until) {
        const result = await timedCall(proxied, auth, body).catch(() => ({ status: 0, lastByte: 0, firstByte: 0 }));
        if (result.status === 200) { done++; latencies.push(result.lastByte); } else failed++;
      }
    }));
    printTable(`Model gateway: ${CONCURRENT} concurrent streams for ${LOAD_SECONDS} s`, [
      { measure: 'calls per second', value: (done / LOAD_SECONDS).toFixed(0) },
      { measure: 'last byte, p50', value: `${pct(latencies, 50).toFixed(1)} ms` },
      { measure: 'last byte, p95', value: `${pct(latencies, 95).toFixed(1)} ms` },
      { measure: 'failed calls', value: failed },
    ]);
  } finally {
    await kernel.stop();
    client.destroy();
    await new Promise<void>((resolve) => { upstream.closeAllConnections(); upstream.close(() => resolve()); });
  }
}
