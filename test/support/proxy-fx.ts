import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createAgent, createAgentKey, createCompany } from './fixtures.ts';
import { startTestKernel, type TestKernel } from './harness.ts';
import { installAndEnable } from './plugins.ts';
import { waitFor } from './wait-for.ts';

/** The proxy fixture plugin (test/host/fixtures/proxy-fx): answers respondProxy as the body's `fx` says. */
export const PROXY_FX = fileURLToPath(new URL('../host/fixtures/proxy-fx', import.meta.url));
export const COMPANY_KEY = 'sk-company-provider-key-0123456789';
export const RATES = { inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 };

export interface ProxySetup {
  t: TestKernel;
  company: { id: string };
  agent: { id: string };
  /** An agent key of the agent: the caller's Keel credential. */
  agentKey: string;
  /** The company's provider key in the vault. */
  secretId: string;
}

/**
 * A kernel that may forward to 127.0.0.1 (the scripted providers), the fixture enabled, a company with an agent and a vaulted key.
 * `overrides`: further configuration of the kernel (its server timeouts, say).
 */
export async function startProxySetup(overrides: Record<string, unknown> = {}): Promise<ProxySetup> {
  const t = await startTestKernel({ llm: { privateNetworkHosts: ['127.0.0.1'] }, ...overrides });
  await installAndEnable(t, PROXY_FX);
  const company = await createCompany(t.api);
  const agent = await createAgent(t.api, company.id);
  const agentKey = await createAgentKey(t.api, agent.id);
  const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'provider-key', value: COMPANY_KEY });
  expect(secret.status, secret.text).toBe(201);
  return { t, company, agent, agentKey, secretId: secret.body.id };
}

/** A call through the fixture's proxy route; `fx` is the proxy answer it should give (also forwarded upstream, as part of the body). */
export function proxyCall(s: ProxySetup, body: Record<string, unknown>, options: { wire?: string; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
  return fetch(`${s.t.url}/api/plugins/proxy-fx/forward/${options.wire ?? 'anthropic'}`, {
    method: 'POST', signal: options.signal,
    headers: { 'content-type': 'application/json', 'x-api-key': s.agentKey, ...options.headers },
    body: JSON.stringify(body),
  });
}

/** The proxy.finished events the fixture recorded, waiting until `count` have arrived. */
export async function finishedEvents(s: ProxySetup, count: number, plugin = 'proxy-fx'): Promise<any[]> {
  return waitFor(async () => {
    const res = await s.t.api.get(`/api/plugins/${plugin}/finished`);
    expect(res.status, res.text).toBe(200);
    return res.body.length >= count ? res.body : undefined;
  }, `${count} proxy.finished events`);
}

/** The one event of a call, by the tag its fx named. */
export async function finishedEvent(s: ProxySetup, tag: string): Promise<any> {
  return waitFor(async () => {
    const res = await s.t.api.get('/api/plugins/proxy-fx/finished');
    return (res.body as any[]).find((event) => event.report.tag === tag);
  }, `the proxy.finished event of ${tag}`);
}

export interface RecordedUpstreamRequest { method: string; path: string; headers: IncomingMessage['headers']; body: Buffer; closed: Promise<void> }

/**
 * An upstream the test drives: each request is recorded and handed to `answer`, which writes the
 * reply at its own pace (it may wait on a promise the test resolves). `closed` resolves when the
 * connection of that request goes away.
 */
export async function startUpstream(answer: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>): Promise<{ url: string; requests: RecordedUpstreamRequest[]; close(): Promise<void> }> {
  const requests: RecordedUpstreamRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), closed };
      requests.push(recorded);
      void Promise.resolve(answer(recorded, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** An Anthropic SSE frame. */
export const anthropicFrame = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => { resolve = done; });
  return { promise, resolve };
}

/** Reads a fetch body until `until` says the text so far is enough; answers that text (the body stays open). */
export async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, until: (text: string) => boolean): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  while (!until(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text;
}
