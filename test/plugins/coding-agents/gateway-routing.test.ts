import { describe, expect, it } from 'vitest';
import { normaliseConfig } from '../../../plugins/coding-agents/src/config.ts';
import type { GatewayTarget, LocalConfig } from '../../../plugins/coding-agents/src/tools/driver.ts';
import { driverFor } from '../../../plugins/coding-agents/src/tools/index.ts';

/**
 * How each tool is pointed at Keel's model gateway when a provider of the company serves its
 * run (the drivers' `gateway`): the base URL the tool calls, the variable that gets the run token
 * (the kernel's tokenVariables) and the configured variables withheld. The real tools' tests
 * (claude-code-gateway.test.ts, codex.test.ts's gateway case, gateway.test.ts) check the tools
 * really send what the gateway reads.
 */
const target = (kind: GatewayTarget['kind']): GatewayTarget => ({ providerId: '11111111-2222-4333-8444-555555555555', kind, baseUrl: 'http://keel.test/api/llm/11111111-2222-4333-8444-555555555555' });
const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'tool', cwd: null, model: null, extraArgs: [], effort: null, maxTurns: null, toolSandbox: false, timeoutSec: 600, graceSec: 5, env: {}, ...overrides,
});
const launchOf = (type: string, local: LocalConfig) => driverFor(type)!.launch({ config: local, sessionId: null, prompt: 'p', instructions: null, skills: [] });

describe('routing each tool through the model gateway', () => {
  it('Claude Code: ANTHROPIC_BASE_URL at the provider, the run token as ANTHROPIC_API_KEY, every other credential withheld', () => {
    const driver = driverFor('alpha_local')!;
    expect(driver.gateway!.kind(config())).toBe('anthropic');
    const routing = driver.gateway!.routing(target('anthropic'), config());
    expect(routing.env).toEqual({ ANTHROPIC_BASE_URL: target('anthropic').baseUrl });
    expect(routing.tokenVariables).toEqual(['ANTHROPIC_API_KEY']);
    expect(routing.withholdVariables).toEqual(expect.arrayContaining(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_BASE_URL']));
  });

  it('Codex: a model provider of its own at the provider\'s /v1, the Responses API, its key from the token variable; the configured keys withheld', () => {
    const driver = driverFor('beta_local')!;
    expect(driver.gateway!.kind(config())).toBe('openai');
    const local = config({ model: 'gpt-test', env: { OPENAI_BASE_URL: 'https://elsewhere.example/v1', OPENAI_API_KEY: { type: 'secret_ref', secretId: 's' } } });
    const routing = driver.gateway!.routing(target('openai'), local);
    expect(routing.tokenVariables).toEqual(['OPENAI_API_KEY']);
    expect(routing.withholdVariables).toEqual(expect.arrayContaining(['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENAI_BASE_URL']));
    const args = launchOf('beta_local', { ...local, gateway: target('openai') }).args;
    const settings = args.flatMap((arg, index) => (args[index - 1] === '-c' ? [arg] : []));
    expect(settings).toEqual(expect.arrayContaining([
      'model_provider="keel_gateway"',
      `model_providers.keel_gateway.base_url="${target('openai').baseUrl}/v1"`,
      'model_providers.keel_gateway.wire_api="responses"',
      'model_providers.keel_gateway.env_key="OPENAI_API_KEY"',
    ]));
    // The configured base URL is not used by a served run.
    expect(args.join(' ')).not.toContain('elsewhere.example');
    // The probe (environment test) is routed the same way.
    expect(driver.probe({ ...local, gateway: target('openai') }).args).toEqual(expect.arrayContaining([`model_providers.keel_gateway.base_url="${target('openai').baseUrl}/v1"`]));
    // Not served: the env's provider as before.
    expect(launchOf('beta_local', local).args).toEqual(expect.arrayContaining(['model_providers.keel_openai.base_url="https://elsewhere.example/v1"']));
  });

  it('Gemini CLI: GOOGLE_GEMINI_BASE_URL at the provider, the run token as GEMINI_API_KEY, the API-key sign-in whatever the env named', () => {
    const driver = driverFor('gamma_local')!;
    expect(driver.gateway!.kind(config())).toBe('gemini');
    const local = config({ env: { GOOGLE_GENAI_USE_VERTEXAI: 'true', GOOGLE_API_KEY: 'k' } });
    const routing = driver.gateway!.routing(target('gemini'), local);
    expect(routing).toMatchObject({ env: { GOOGLE_GEMINI_BASE_URL: target('gemini').baseUrl }, tokenVariables: ['GEMINI_API_KEY'] });
    expect(routing.withholdVariables).toEqual(expect.arrayContaining(['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENAI_USE_VERTEXAI']));
    const settings = (local: LocalConfig) => JSON.parse(launchOf('gamma_local', local).homeFiles.find((file) => file.path === '.gemini/settings.json')!.content);
    expect(settings({ ...local, gateway: target('gemini') }).security.auth.selectedType).toBe('gemini-api-key');
    expect(settings(local).security.auth.selectedType).toBe('vertex-ai');
  });

  it('OpenCode: the built-in provider its model names, pointed at the gateway in OPENCODE_CONFIG_CONTENT; its own configuration holds otherwise', () => {
    const driver = driverFor('delta_local')!;
    expect(driver.gateway!.kind(config({ model: 'anthropic/claude-test' }))).toBe('anthropic');
    expect(driver.gateway!.kind(config({ model: 'openai/gpt-test' }))).toBe('openai');
    expect(driver.gateway!.kind(config({ model: 'google/gemini-test' }))).toBe('gemini');
    expect(driver.gateway!.kind(config({ model: 'scripted/model' }))).toBeNull();
    expect(driver.gateway!.kind(config({ model: null }))).toBeNull();
    expect(driver.gateway!.kind(config({ model: 'anthropic/claude-test', env: { OPENCODE_CONFIG_CONTENT: '{}' } }))).toBeNull();
    const routing = driver.gateway!.routing(target('anthropic'), config({ model: 'anthropic/claude-test' }));
    expect(JSON.parse(routing.env.OPENCODE_CONFIG_CONTENT!)).toEqual({
      provider: { anthropic: { npm: '@ai-sdk/anthropic', options: { baseURL: `${target('anthropic').baseUrl}/v1`, apiKey: '{env:ANTHROPIC_API_KEY}' }, models: { 'claude-test': {} } } },
    });
    expect(routing.tokenVariables).toEqual(['ANTHROPIC_API_KEY']);
    const google = driver.gateway!.routing(target('gemini'), config({ model: 'google/gemini-test' }));
    expect(JSON.parse(google.env.OPENCODE_CONFIG_CONTENT!).provider.google.options.baseURL).toBe(`${target('gemini').baseUrl}/v1beta`);
    expect(google.tokenVariables).toEqual(['GOOGLE_GENERATIVE_AI_API_KEY']);
  });

  it('Pi and Cursor are not routed: they keep their own credentials', () => {
    expect(driverFor('pi_local')!.gateway).toBeUndefined();
    expect(driverFor('cursor')!.gateway).toBeUndefined();
  });

  it('adapterConfig.modelProvider is a provider name or "none", kept as written', () => {
    const driver = driverFor('alpha_local')!;
    expect(normaliseConfig(driver, { modelProvider: 'Anthropic main' }).modelProvider).toBe('Anthropic main');
    expect(normaliseConfig(driver, { modelProvider: 'none' }).modelProvider).toBe('none');
    expect(normaliseConfig(driver, {}).modelProvider).toBeNull();
    for (const bad of ['', 42, 'x'.repeat(101), 'line\nbreak']) {
      expect(() => normaliseConfig(driver, { modelProvider: bad }), JSON.stringify(bad)).toThrow(/adapterConfig\.modelProvider/);
    }
  });
});
