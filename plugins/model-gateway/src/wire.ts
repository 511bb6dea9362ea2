import type { MeterKind, ProxySpec } from '@keel/sdk/plugin';
import type { Kind } from './context.ts';

/** One gateway path: the provider kind it belongs to, the provider's own path and how it is metered. */
export interface GatewayRoute {
  kind: Kind;
  meter: MeterKind;
  /** Whether the call spends (priced, budgeted, rate limited); token counting does not. */
  spends: boolean;
}

export const GATEWAY_ROUTES = {
  'anthropic-messages': { kind: 'anthropic', meter: 'anthropic', spends: true },
  'anthropic-count-tokens': { kind: 'anthropic', meter: 'none', spends: false },
  'openai-responses': { kind: 'openai', meter: 'openai-responses', spends: true },
  'openai-chat': { kind: 'openai', meter: 'openai-chat', spends: true },
  'gemini-models': { kind: 'gemini', meter: 'gemini', spends: true },
} as const satisfies Record<string, GatewayRoute>;

export type GatewayRouteKey = keyof typeof GATEWAY_ROUTES;

const PATHS: Record<Exclude<GatewayRouteKey, 'gemini-models'>, string> = {
  'anthropic-messages': '/v1/messages',
  'anthropic-count-tokens': '/v1/messages/count_tokens',
  'openai-responses': '/v1/responses',
  'openai-chat': '/v1/chat/completions',
};

/** Gemini's model and action from the path (`gemini-2.5-pro:streamGenerateContent`); null for anything else. */
export function geminiAction(modelAction: string | undefined): { model: string; action: 'generateContent' | 'streamGenerateContent' } | null {
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]{0,199}):(generateContent|streamGenerateContent)$/.exec(modelAction ?? '');
  return match ? { model: match[1]!, action: match[2] as 'generateContent' | 'streamGenerateContent' } : null;
}

/**
 * The upstream URL: the provider's base URL and the provider's own path for the route, never
 * anything of the client's path but Gemini's checked model and action (and its `alt=sse`).
 */
export function upstreamUrl(baseUrl: string, key: GatewayRouteKey, gemini: ReturnType<typeof geminiAction>, query: Record<string, unknown>): string {
  if (key === 'gemini-models') return `${baseUrl}/v1beta/models/${gemini!.model}:${gemini!.action}${query.alt === 'sse' ? '?alt=sse' : ''}`;
  return `${baseUrl}${PATHS[key]}`;
}

/** How the company's key travels to a provider of the kind. */
export function credentialFor(kind: Kind, secretId: string, version: number | null): ProxySpec['credential'] {
  const pinned = version ?? 'latest';
  if (kind === 'anthropic') return { secretId, version: pinned, header: 'x-api-key' };
  if (kind === 'openai') return { secretId, version: pinned, header: 'authorization', prefix: 'Bearer ' };
  return { secretId, version: pinned, header: 'x-goog-api-key' };
}

/** Whether the agent may use the model: no list allows every model; entries are exact names or prefixes ending in `*`. */
export function modelAllowed(allowed: unknown, model: string): boolean {
  if (!Array.isArray(allowed)) return true;
  return allowed.some((entry) => typeof entry === 'string' && (entry.endsWith('*') ? model.startsWith(entry.slice(0, -1)) : entry === model));
}
