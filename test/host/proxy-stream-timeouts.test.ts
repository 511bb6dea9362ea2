import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicFrame, deferred, finishedEvent, proxyCall, RATES, readUntil, startProxySetup, startUpstream, type ProxySetup } from '../support/proxy-fx.ts';

/**
 * The server's connection timeouts (server.headersTimeoutMs, keepAliveTimeoutMs) close silent
 * connections, never a streamed model answer that is quiet for longer than they are: the
 * request's headers are in, and the answer ends when the provider's does.
 */
const TIMEOUT_MS = 300;
let s: ProxySetup;
beforeAll(async () => { s = await startProxySetup({ server: { headersTimeoutMs: TIMEOUT_MS, keepAliveTimeoutMs: TIMEOUT_MS } }); });
afterAll(async () => { await s?.t.stop(); });

/** Opens a connection to the kernel that sends nothing; resolves with what the server said once it closed it. */
function silentConnection(): Promise<string> {
  const socket = connect(Number(new URL(s.t.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

describe('a streamed proxy answer', () => {
  it('quiet for longer than the connection timeouts is not cut', async () => {
    const gate = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(anthropicFrame({ type: 'message_start', message: { model: 'claude-test', usage: { input_tokens: 3, output_tokens: 1 } } }));
      await gate.promise;
      res.write(anthropicFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'still here' } }));
      res.write(anthropicFrame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }));
      res.end(anthropicFrame({ type: 'message_stop' }));
    });
    try {
      const res = await proxyCall(s, { model: 'claude-test', stream: true, fx: { secretId: s.secretId, rates: RATES, limitCents: null, url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'quiet' } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect(await readUntil(reader, (text) => text.includes('\n\n'))).toContain('message_start');
      // Two silent connections opened after the stream went quiet are closed by the timeout: it has passed.
      for (let i = 0; i < 2; i++) expect(await silentConnection()).toContain('"code":"request_timeout"');
      gate.resolve();
      const rest = await readUntil(reader, () => false);
      expect(rest).toContain('still here');
      expect(rest).toContain('message_stop');
      expect(await finishedEvent(s, 'quiet')).toMatchObject({ status: 'completed', usage: { outputTokens: 2 } });
    } finally {
      await upstream.close();
    }
  });
});
