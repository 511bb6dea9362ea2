import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { KeelConfig } from '../config/schema.ts';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';
import { KeelError } from '../http/errors.ts';
import type { Vault } from '../vault/vault.ts';
import { callCents, ZERO_USAGE } from '../../sdk/shared/model-prices.ts';
import { meterFor } from './meters/index.ts';
import { ProxiedCalls, type CallEnd } from './proxied-calls.ts';
import { ProxyCredentials } from './proxy-credential.ts';
import { streamAnswer, type StopReason } from './proxy-exchange.ts';
import { sendSummary, summaryOf, SummaryBody } from './proxy-summary.ts';
import { checkProxySpec } from './proxy-spec.ts';
import { checkProxyUrl } from './proxy-target.ts';
import { sendUpstream, upstreamHeaders } from './upstream.ts';

/** How long a call that crossed its limit waits for the plugin to charge it before its answer ends. */
const CROSSED_CHARGE_WAIT_MS = 5_000;

/** One request a plugin answered with respondProxy, as the route hands it over. */
export interface ProxyRequest {
  plugin: string;
  /** The request's company (the calling agent's); the key must be one of its secrets. */
  companyId: string;
  /** The plugin's ProxySpec, not yet checked. */
  spec: unknown;
  rawBody: Buffer;
  parsedBody: Record<string, unknown>;
  req: IncomingMessage;
  res: ServerResponse;
  /** performance.now() when the request reached the route. */
  receivedAt: number;
}

/**
 * The kernel's half of the model gateway ("isolates decide; executors act"): a plugin decided
 * who may call which provider with which key at what price; this forwards the request with the
 * company's key, streams the answer back, meters it, cuts it past the plugin's limit, and
 * records it in the proxied-call ledger, whose end reaches the plugin as proxy.finished.
 */
export class ModelGateway {
  readonly calls: ProxiedCalls;
  readonly credentials: ProxyCredentials;
  private readonly config: KeelConfig;
  private readonly log: Logger;

  constructor(deps: { config: KeelConfig; log: Logger; db: Database; events: EventBus; vault: Vault }) {
    this.config = deps.config;
    this.log = deps.log;
    this.calls = new ProxiedCalls(deps);
    this.credentials = new ProxyCredentials(deps);
  }

  start(): void { this.calls.start(); }
  stop(): Promise<void> { return this.calls.stop(); }

  /**
   * Forwards one request. Throws a KeelError (answered as JSON) while nothing is written yet:
   * an invalid spec, a refused target, an unreadable key, an unreachable provider. Resolves once
   * the exchange has ended and its row is terminal.
   */
  async forward(request: ProxyRequest): Promise<void> {
    const spec = checkProxySpec(request.spec);
    let clientGone = request.res.destroyed;
    request.res.once('close', () => { if (!request.res.writableFinished) clientGone = true; });
    const [target, key] = await Promise.all([
      checkProxyUrl(spec.url, this.config, { allowQuery: true }),
      this.credentials.reveal(request.companyId, spec.credential.secretId, spec.credential.version),
    ]);
    // A client that left while the plugin decided gets nothing forwarded (and nothing is recorded).
    if (clientGone) return;
    const body = spec.setBodyFields ? Buffer.from(JSON.stringify({ ...request.parsedBody, ...spec.setBodyFields })) : request.rawBody;
    const callId = this.calls.newId();
    const meter = meterFor(spec.meter, body.length);
    const upstreamAbort = new AbortController();
    let stopReason: StopReason | null = null;
    const stopListeners: Array<(reason: StopReason) => void> = [];
    const stop = (reason: StopReason): void => {
      if (stopReason) return;
      stopReason = reason;
      upstreamAbort.abort();
      for (const listener of stopListeners) listener(reason);
    };
    let idle: NodeJS.Timeout | undefined;
    const touch = (): void => { clearTimeout(idle); idle = setTimeout(() => stop('timed_out'), spec.idleTimeoutMs); };
    touch();
    const longest = setTimeout(() => stop('timed_out'), spec.maxDurationMs);
    request.res.on('close', () => { if (!request.res.writableFinished) stop('client_gone'); });

    // The row and the provider's connection at once: the row is committed before the first byte goes out.
    const opened = this.calls.open({ id: callId, plugin: request.plugin, companyId: request.companyId, meter: spec.meter, rates: spec.rates, report: spec.report });
    opened.catch(() => undefined);
    // Leased from the start: a provider may take minutes before its first header (a long answer that does not stream).
    void opened.then(() => this.calls.live.set(callId, { id: callId, checkpoint: () => ({ usage: meter.state.usage(), model: meter.state.model }), abort: () => stop('lost') }), () => undefined);
    const finish = async (end: CallEnd): Promise<string | null> => {
      clearTimeout(idle);
      clearTimeout(longest);
      try { await opened; } catch { return null; }
      return this.calls.finish(callId, spec.rates, end).catch((error: unknown) => {
        this.log.error({ err: error, callId }, 'could not record the end of a proxied call');
        return null;
      });
    };
    // The key is about to be sent: its use is audited (written after this call's work, off the first-byte path).
    this.credentials.audit({ companyId: request.companyId, plugin: request.plugin, secretId: spec.credential.secretId, version: key.version, callId });
    const sentAt = performance.now();
    const mask = (text: string) => (key.value.length >= 8 ? text.split(key.value).join('***') : text);
    let upstream: IncomingMessage;
    try {
      upstream = await sendUpstream({
        url: target.url, addresses: target.addresses, body, signal: upstreamAbort.signal,
        headers: upstreamHeaders(request.req.headers, spec.headers, { header: spec.credential.header, value: `${spec.credential.prefix}${key.value}` }, body.length),
      });
    } catch (error) {
      const reason = stopReason as StopReason | null;
      const failed: CallEnd = { status: reason ?? 'upstream_error', httpStatus: null, model: null, usage: { ...ZERO_USAGE }, usageEstimated: false, firstByteMs: null };
      await finish(failed);
      // A summary's client asked whether the provider answers: that it could not be reached is the answer.
      if (spec.answer === 'summary') {
        const why = reason === 'timed_out' ? 'did not answer in time' : `could not be reached (${(error as { code?: string }).code ?? 'connection failed'})`;
        return sendSummary(request.res, { ...summaryOf(failed, Math.round(performance.now() - sentAt), '', mask), error: `The model provider ${why}` });
      }
      if (reason === 'timed_out') throw new KeelError(504, 'upstream_timeout', 'The model provider did not answer in time', { expose: true });
      throw new KeelError(502, 'upstream_unreachable', `The model provider could not be reached (${(error as { code?: string }).code ?? 'connection failed'})`, { expose: true });
    }
    try {
      await opened;
    } catch (error) {
      upstreamAbort.abort();
      upstream.destroy();
      clearTimeout(idle);
      clearTimeout(longest);
      throw error;
    }
    upstream.on('data', touch);
    const collect = spec.answer === 'summary' ? new SummaryBody() : undefined;
    const end = await streamAnswer({
      collect,
      spec, meter, res: request.res, upstream,
      abortUpstream: () => upstreamAbort.abort(),
      elapsed: () => performance.now() - request.receivedAt,
      stopped: () => stopReason,
      onStop: (listener) => { stopListeners.push(listener); },
    });
    // A call that reached its limit (cut, or answered whole past it) ends for the client only once
    // the plugin has charged it, so that the client's next call is judged on the crossed budget;
    // any other ends at once.
    const crossed = spec.limitCents !== null && spec.rates !== null && (end.status === 'cut' || callCents(spec.rates, end.usage) >= spec.limitCents);
    const endAnswer = () => { if (!collect && !request.res.destroyed && !request.res.writableEnded) request.res.end(); };
    if (!crossed) endAnswer();
    const eventId = await finish(end);
    if (crossed) {
      if (eventId && !request.res.destroyed) await this.calls.delivered(eventId, CROSSED_CHARGE_WAIT_MS);
      endAnswer();
    }
    if (collect) sendSummary(request.res, summaryOf(end, Math.round(performance.now() - sentAt), collect.text(), mask));
  }
}
