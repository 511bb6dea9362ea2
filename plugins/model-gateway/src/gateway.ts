import { allOf, priceFor, respondProxy, type RouteRequest } from '@keel/sdk/plugin';
import { isObject, UUID, type GatewayContext } from './context.ts';
import type { ProviderRow } from './provider-json.ts';
import { countCall } from './rate-limits.ts';
import { credentialFor, GATEWAY_ROUTES, geminiAction, modelAllowed, upstreamUrl, type GatewayRouteKey } from './wire.ts';
import { GatewayRefusal, refuse } from './wire-errors.ts';

interface BudgetAnswer {
  blocks: Array<{ scopeType: string; scopeId: string }>;
  remainingCents?: number | null;
  paused?: { scopeType?: string; scope?: string; scopeId?: string; reason?: string } | null;
}
interface RunContext { runId: string; agentId: string; issueId: string | null; projectId: string | null; status: string }

const LIVE_RUN = new Set(['queued', 'running']);

/**
 * A gateway route: one decision per call, in this isolate, answered either by a refusal in the
 * provider's error shape (never forwarded) or by `respondProxy`, with which the kernel forwards
 * the raw body to the company's provider with the key from the vault, meters the answer and
 * cuts a stream past the budget left.
 */
export function gatewayRoute(key: GatewayRouteKey) {
  const route = GATEWAY_ROUTES[key];
  return async (request: RouteRequest, ctx: GatewayContext) => {
    try {
      return await decide(key, request, ctx);
    } catch (error) {
      if (error instanceof GatewayRefusal) return refuse(route.kind, error.refusal, error.code, error.message, error.retryAfterSeconds);
      throw error;
    }
  };
}

async function decide(key: GatewayRouteKey, request: RouteRequest, ctx: GatewayContext) {
  const route = GATEWAY_ROUTES[key];
  const { actor, companyId, runId } = ctx.invocation;
  // Only agents call providers through Keel; the local board of a local_trusted instance too is refused.
  const agentId = actor.type === 'agent' ? actor.agentId ?? actor.id : null;
  if (!agentId || !companyId) {
    throw new GatewayRefusal('unauthenticated', 'invalid_api_key', 'Keel model gateway: send the run token (or the agent key with X-Service-Run-Id) of an agent as the API key');
  }
  // Three independent reads at once (the provider with its company's limits, the run, the agent);
  // their answers are judged in the order below, whatever order they arrive in.
  const [provider, run, config] = await allOf([
    providerOfCompany(ctx, request.params.providerId, companyId),
    runId ? ctx.services.call<RunContext | null>('runtime', 'run-context', { runId }) : Promise.resolve(null),
    ctx.agents.getConfig(agentId),
  ] as const);
  if (!provider || provider.kind !== route.kind) throw new GatewayRefusal('not_found', 'provider_not_found', 'Keel model gateway: no such model provider of this kind in the agent\'s company');
  const gemini = key === 'gemini-models' ? geminiAction(request.params.modelAction) : null;
  if (key === 'gemini-models' && !gemini) throw new GatewayRefusal('not_found', 'path_not_found', 'Keel model gateway: only models/{model}:generateContent and :streamGenerateContent are served');
  const body = isObject(request.body) ? request.body : {};
  const model = gemini ? gemini.model : body.model;
  if (typeof model !== 'string' || model.length === 0 || model.length > 200) throw new GatewayRefusal('invalid_request', 'model_required', 'Keel model gateway: the request must name its model');

  // An agent key alone calls outside any run (charged to the agent, no issue or project); a run
  // token, or a key with X-Service-Run-Id, charges the run, which must still be live.
  if (runId && (!run || run.agentId !== agentId || !LIVE_RUN.has(run.status))) throw new GatewayRefusal('unauthenticated', 'run_ended', 'Keel model gateway: the run of this token has ended');

  if (!config) throw new GatewayRefusal('unauthenticated', 'invalid_api_key', 'Keel model gateway: unknown agent');
  if (config.status === 'paused') throw new GatewayRefusal('forbidden', 'agent_paused', 'Keel model gateway: this agent is paused; no model calls until the board resumes it');
  if (!modelAllowed(config.runtimeConfig.allowedModels, model)) {
    throw new GatewayRefusal('forbidden', 'model_not_allowed', `Keel model gateway: model "${model}" is not in this agent's allowedModels`);
  }
  const price = priceFor(provider.models, model);
  const rates = price ? { inputCentsPerMTok: price.inputCentsPerMTok, cachedInputCentsPerMTok: price.cachedInputCentsPerMTok, cacheWriteCentsPerMTok: price.cacheWriteCentsPerMTok, outputCentsPerMTok: price.outputCentsPerMTok } : null;
  let limitCents: number | null = null;
  if (route.spends) {
    if (!rates && !provider.allow_unpriced_models) {
      throw new GatewayRefusal('forbidden', 'model_not_priced', `Keel model gateway: model "${model}" has no price in provider "${provider.name}"; the board adds one (or allows unpriced models)`);
    }
    const budget = await ctx.services.call<BudgetAnswer>('costs', 'budget-blocks', { agentId, projectId: run?.projectId ?? null });
    const block = budget.blocks[0];
    if (block) {
      throw new GatewayRefusal('forbidden', 'budget_exceeded', `Keel model gateway: the ${block.scopeType} budget hard stop is reached (${block.scopeType} ${block.scopeId}); no model calls until the board raises the budget`);
    }
    if (budget.paused) {
      const scope = budget.paused.scopeType ?? budget.paused.scope ?? 'agent';
      throw new GatewayRefusal('forbidden', `${scope}_paused`, `Keel model gateway: the ${scope} is paused (${budget.paused.reason ?? 'paused'}); no model calls until the board resumes it`);
    }
    limitCents = budget.remainingCents ?? null;
    await countCall(ctx, companyId, provider.calls_per_minute, provider.tokens_per_minute);
  }
  return respondProxy({
    url: upstreamUrl(provider.base_url, key, gemini, request.query),
    credential: credentialFor(provider.kind, provider.api_key_secret_id!, provider.api_key_version),
    ...(key === 'openai-chat' && body.stream === true ? { setBodyFields: { stream_options: { ...(isObject(body.stream_options) ? body.stream_options : {}), include_usage: true } } } : {}),
    meter: route.meter,
    rates,
    limitCents,
    cutMessage: 'Keel cut this stream: a budget hard stop was reached while it ran',
    report: {
      agentId, runId: run?.runId ?? null, issueId: run?.issueId ?? null, projectId: run?.projectId ?? null,
      providerId: provider.id, providerName: provider.name, kind: provider.kind, model,
    },
  });
}

type GatewayProvider = ProviderRow & { calls_per_minute: number | null; tokens_per_minute: number | null };

/** The provider and its company's limits, in one read; another company's provider is not found, like an unknown id. */
async function providerOfCompany(ctx: GatewayContext, providerId: string | undefined, companyId: string): Promise<GatewayProvider | null> {
  if (!providerId || !UUID.test(providerId)) return null;
  const { rows } = await ctx.db.query(
    `select p.id::text as id, p.name, p.kind, p.base_url, p.api_key_secret_id::text as api_key_secret_id, p.api_key_version, p.models, p.allow_unpriced_models,
            l.calls_per_minute, l.tokens_per_minute::float8 as tokens_per_minute
       from providers p left join limits l on l.company_id = p.company_id
      where p.id = $1 and p.company_id = $2`, [providerId.toLowerCase(), companyId]);
  const row = rows[0] as unknown as GatewayProvider | undefined;
  if (!row || !row.api_key_secret_id) return null;
  return { ...row, calls_per_minute: row.calls_per_minute ?? null, tokens_per_minute: row.tokens_per_minute ?? null };
}

