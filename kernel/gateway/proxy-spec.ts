import { KeelError } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';
import { METER_KINDS, PROXY_CREDENTIAL_HEADERS, type MeterKind, type ProxySpec } from '../../sdk/plugin/answers.ts';
import type { PriceRates } from '../../sdk/shared/model-prices.ts';

export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
export const DEFAULT_MAX_DURATION_MS = 3_600_000;
const MAX_REPORT_BYTES = 8 * 1024;
const HEADER_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * Headers a proxy answer may not set upstream: credentials (the kernel sets the one the spec
 * names, from the vault), the client's Keel identity, and what the kernel frames itself
 * (hop-by-hop, length, encoding, host).
 */
export const REFUSED_UPSTREAM_HEADERS = new Set([
  'authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'cookie', 'proxy-authorization', 'x-service-run-id',
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection', 'accept-encoding', 'expect',
]);

/** A validated proxy answer, with the defaults applied. */
export interface CheckedSpec extends ProxySpec {
  credential: { secretId: string; version: number | 'latest'; header: ProxySpec['credential']['header']; prefix: string };
  headers: Record<string, string>;
  meter: MeterKind;
  idleTimeoutMs: number;
  maxDurationMs: number;
  cutMessage: string;
}

const invalid = (message: string) => new KeelError(502, 'plugin_invalid_response', `The plugin answered an invalid proxy: ${message}`, { expose: true });
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The plugin's ProxySpec, checked field by field: anything off is the plugin's fault (502 plugin_invalid_response). */
export function checkProxySpec(value: unknown): CheckedSpec {
  if (!isObject(value)) throw invalid('the spec is not an object');
  const { url, credential, headers, setBodyFields, meter, rates, limitCents, cutMessage, idleTimeoutMs, maxDurationMs, report, answer } = value;
  if (typeof url !== 'string' || url.length > 8192) throw invalid('url must be a string of at most 8192 characters');
  if (!isObject(credential) || typeof credential.secretId !== 'string' || !isUuid(credential.secretId)) throw invalid('credential.secretId must be a secret id');
  const version = credential.version ?? 'latest';
  if (version !== 'latest' && !(Number.isInteger(version) && (version as number) >= 1)) throw invalid("credential.version must be a positive integer or 'latest'");
  if (!(PROXY_CREDENTIAL_HEADERS as readonly unknown[]).includes(credential.header)) throw invalid(`credential.header must be one of ${PROXY_CREDENTIAL_HEADERS.join(', ')}`);
  const prefix = credential.prefix ?? '';
  if (typeof prefix !== 'string' || prefix.length > 64 || /[^\x20-\x7e]/.test(prefix)) throw invalid('credential.prefix must be at most 64 visible characters');
  const upstreamHeaders: Record<string, string> = {};
  if (headers !== undefined && headers !== null) {
    if (!isObject(headers) || Object.keys(headers).length > 32) throw invalid('headers must be an object of at most 32 headers');
    for (const [name, text] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(lower) || REFUSED_UPSTREAM_HEADERS.has(lower)) throw invalid(`headers may not set ${name.slice(0, 64)}`);
      if (typeof text !== 'string' || text.length > 8192 || /[^\t\x20-\x7e]/.test(text)) throw invalid(`headers.${lower} must be printable text`);
      upstreamHeaders[lower] = text;
    }
  }
  if (setBodyFields !== undefined && setBodyFields !== null && (!isObject(setBodyFields) || Object.keys(setBodyFields).length > 16)) throw invalid('setBodyFields must be an object of at most 16 fields');
  if (answer !== undefined && answer !== 'provider' && answer !== 'summary') throw invalid("answer must be 'provider' or 'summary'");
  if (!(METER_KINDS as readonly unknown[]).includes(meter)) throw invalid(`meter must be one of ${METER_KINDS.join(', ')}`);
  if (limitCents !== null && !(typeof limitCents === 'number' && Number.isFinite(limitCents) && limitCents >= 0)) throw invalid('limitCents must be a number >= 0 or null');
  if (cutMessage !== undefined && (typeof cutMessage !== 'string' || cutMessage.length > 1000)) throw invalid('cutMessage must be a string of at most 1000 characters');
  const idle = idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const max = maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
  if (!Number.isInteger(idle) || (idle as number) < 10 || (idle as number) > DEFAULT_IDLE_TIMEOUT_MS * 2) throw invalid('idleTimeoutMs must be an integer between 10 and 600000');
  if (!Number.isInteger(max) || (max as number) < 10 || (max as number) > DEFAULT_MAX_DURATION_MS * 4) throw invalid('maxDurationMs must be an integer between 10 and 14400000');
  if (!isObject(report) || Buffer.byteLength(JSON.stringify(report)) > MAX_REPORT_BYTES) throw invalid(`report must be an object of at most ${MAX_REPORT_BYTES} bytes of JSON`);
  return {
    url, meter: meter as MeterKind, answer: (answer as CheckedSpec['answer']) ?? 'provider', rates: checkRates(rates), limitCents: limitCents as number | null, report,
    credential: { secretId: credential.secretId.toLowerCase(), version: version as number | 'latest', header: credential.header as CheckedSpec['credential']['header'], prefix },
    headers: upstreamHeaders, ...(isObject(setBodyFields) ? { setBodyFields } : {}),
    cutMessage: (cutMessage as string | undefined) ?? 'The budget for this call is exhausted', idleTimeoutMs: idle as number, maxDurationMs: max as number,
  };
}

function checkRates(rates: unknown): PriceRates | null {
  if (rates === null || rates === undefined) return null;
  if (!isObject(rates)) throw invalid('rates must be an object or null');
  const fields = ['inputCentsPerMTok', 'cachedInputCentsPerMTok', 'cacheWriteCentsPerMTok', 'outputCentsPerMTok'] as const;
  for (const field of fields) {
    const number = rates[field];
    if (typeof number !== 'number' || !Number.isFinite(number) || number < 0) throw invalid(`rates.${field} must be a number >= 0`);
  }
  return { inputCentsPerMTok: rates.inputCentsPerMTok as number, cachedInputCentsPerMTok: rates.cachedInputCentsPerMTok as number, cacheWriteCentsPerMTok: rates.cacheWriteCentsPerMTok as number, outputCentsPerMTok: rates.outputCentsPerMTok as number };
}
