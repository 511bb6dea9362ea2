import { PluginError, respondProxy, type ProxyFinishedEvent, type RouteRequest } from '@keel/sdk/plugin';
import { isObject, type GatewayContext } from './context.ts';
import { providerById } from './providers.ts';
import { credentialFor } from './wire.ts';

/**
 * `POST /api/model-providers/{id}/test`: one minimal call to the provider, by the gateway's own
 * path (the kernel forwards it with the key from the vault, as it forwards agents' calls), so
 * the test proves what an agent's call needs: the address, the key and the model. The answer
 * is the kernel's summary of the call, `{ok, status, latencyMs, error}` (the provider's own
 * error message when it refused), and the outcome is also kept as the provider's `lastTest`
 * ({ok, status, latencyMs, error, testedAt}) for the list of providers.
 *
 * The calls cost nothing where the provider counts tokens for free (Anthropic's count_tokens,
 * Gemini's countTokens); OpenAI has no such call, so its test asks chat completions for at most
 * 16 output tokens (metered like any call, charged to no agent).
 */
export async function testProvider(request: RouteRequest, ctx: GatewayContext) {
  const provider = await providerById(ctx, request.params.providerId!);
  const body = isObject(request.body) ? request.body : {};
  const model = typeof body.model === 'string' && body.model.length > 0 ? body.model : provider.models.find((entry) => !entry.model.endsWith('*'))?.model;
  if (!model || model.length > 200) {
    throw new PluginError(422, 'model_required', 'Name the model to test with ({"model": "..."}): the provider\'s price table has no exact model name', { field: 'model' });
  }
  if (!provider.api_key_secret_id) throw new PluginError(422, 'api_key_required', 'The provider has no API key', { field: 'apiKey' });
  const credential = credentialFor(provider.kind, provider.api_key_secret_id, provider.api_key_version);
  const report = { test: true, providerId: provider.id };
  // The board gets the kernel's summary ({ok, status, latencyMs, error}), never the provider's bytes.
  const answer = 'summary' as const;
  const ping = 'ping';
  if (provider.kind === 'anthropic') {
    return respondProxy({
      url: `${provider.base_url}/v1/messages/count_tokens`, credential, meter: 'none', rates: null, limitCents: null, report, answer,
      headers: { 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      setBodyFields: { model, messages: [{ role: 'user', content: ping }] },
    });
  }
  if (provider.kind === 'openai') {
    return respondProxy({
      url: `${provider.base_url}/v1/chat/completions`, credential, meter: 'openai-chat', rates: null, limitCents: null, report, answer,
      headers: { 'content-type': 'application/json' },
      setBodyFields: { model, messages: [{ role: 'user', content: ping }], max_completion_tokens: 16, stream: false },
    });
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(model)) throw new PluginError(422, 'invalid_model', 'model: letters, digits, dots, dashes and underscores only', { field: 'model' });
  return respondProxy({
    url: `${provider.base_url}/v1beta/models/${model}:countTokens`, credential, meter: 'none', rates: null, limitCents: null, report, answer,
    headers: { 'content-type': 'application/json' },
    setBodyFields: { contents: [{ role: 'user', parts: [{ text: ping }] }] },
  });
}

/** A test call's outcome, kept on its provider (a later test replaces it). */
export async function recordTest(ctx: GatewayContext, event: ProxyFinishedEvent): Promise<void> {
  const ok = event.status === 'completed' && event.httpStatus !== null && event.httpStatus < 400;
  const outcome = {
    ok, status: event.httpStatus, latencyMs: event.firstByteMs,
    error: ok ? null : event.httpStatus === null ? `no answer (${event.status})` : `the provider answered ${event.httpStatus}`,
    testedAt: event.finishedAt,
  };
  await ctx.db.query('update providers set last_test = $2::jsonb where id = $1 and company_id = $3 and (last_test is null or last_test->>\'testedAt\' <= $4)',
    [event.report.providerId, JSON.stringify(outcome), event.companyId, event.finishedAt]);
}
