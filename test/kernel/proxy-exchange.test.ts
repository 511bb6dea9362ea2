import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { meterFor } from '../../kernel/gateway/meters/index.ts';
import { streamAnswer, type StopReason } from '../../kernel/gateway/proxy-exchange.ts';
import type { CheckedSpec } from '../../kernel/gateway/proxy-spec.ts';
import type { CallEnd } from '../../kernel/gateway/proxied-calls.ts';

/**
 * The model gateway writes a call's row between the provider's first header and streaming
 * its answer. A client that goes away meanwhile stops the exchange before streamAnswer
 * listens: the exchange must still end (its row recorded), never wait for events that have
 * already passed.
 */
const servers: http.Server[] = [];
afterEach(async () => { for (const server of servers.splice(0)) { server.closeAllConnections(); server.close(); } });

async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A provider's streaming answer, begun and never finished. */
async function upstreamAnswer(): Promise<IncomingMessage> {
  const url = await listen((_req, res) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.write('event: ping\ndata: {}\n\n'); });
  const [response] = await once(http.get(url), 'response') as [IncomingMessage];
  return response;
}

const SPEC = { rates: null, limitCents: null, answer: 'stream', meter: 'anthropic', cutMessage: 'cut', idleTimeoutMs: 60_000, maxDurationMs: 60_000, headers: {} } as unknown as CheckedSpec;

/** Runs streamAnswer as the gateway would for a client's request, with the exchange's stop state given; answers how it ended, or 'hung'. */
async function exchange(upstream: IncomingMessage, stopped: StopReason | null): Promise<CallEnd | 'hung'> {
  let ended: Promise<CallEnd> | undefined;
  const url = await listen((_req, res) => {
    ended = streamAnswer({
      spec: SPEC, meter: meterFor('anthropic', 0), res, upstream, abortUpstream: () => upstream.destroy(), elapsed: () => 1,
      stopped: () => stopped,
      // The stop's listeners were called before this one was added: it is never called.
      onStop: () => undefined,
    });
  });
  const request = http.get(url);
  request.on('error', () => undefined);
  await once(request, 'response');
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 3000).unref());
  return Promise.race([ended!, hung]);
}

describe('a proxied exchange stopped before its answer streams', () => {
  it('ends as client_gone when the client left while the row was being written', async () => {
    const upstream = await upstreamAnswer();
    upstream.destroy();
    await once(upstream, 'close');
    expect(await exchange(upstream, 'client_gone')).toMatchObject({ status: 'client_gone', httpStatus: 200 });
  });

  it('ends as broken when the provider\'s answer broke off before anyone listened', async () => {
    const upstream = await upstreamAnswer();
    upstream.destroy();
    await once(upstream, 'close');
    expect(await exchange(upstream, null)).toMatchObject({ status: 'broken' });
  });
});
