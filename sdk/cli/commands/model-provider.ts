import { CliError, clientFor, companyIdFor, emit, emitList, emitRecord, table, cell, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';
import { readSecretValue } from './secret.ts';

/**
 * Model providers of a company and its gateway limits (docs/api/model-gateway.md). The provider's
 * key never comes from a flag: the argument list of a process is readable by every user of the
 * machine (`ps`, /proc/<pid>/cmdline) and lands in shell history. It is read from stdin
 * (`--api-key-stdin`) or a file (`--api-key-file`), sent once, and stored in the vault by the
 * server; or the key is already a company secret, named with `--api-key-secret <id>[@version]`.
 */
type Options = GlobalOptions & {
  name?: string; kind?: string; baseUrl?: string; apiKeySecret?: string; apiKeyStdin?: boolean; apiKeyFile?: string;
  price?: string[]; clearPrices?: boolean; allowUnpricedModels?: string | boolean; default?: string | boolean; yes?: boolean;
  callsPerMinute?: string; tokensPerMinute?: string; model?: string;
};

interface Price { model: string; inputCentsPerMTok: number; cachedInputCentsPerMTok: number; cacheWriteCentsPerMTok: number; outputCentsPerMTok: number }
interface Provider { id: string; name: string; kind: string; baseUrl: string; isDefault: boolean; allowUnpricedModels: boolean; models: Price[]; apiKeySecretId?: string | null; apiKey?: { secretId?: string } | null; lastTest?: TestOutcome | null; [field: string]: unknown }

const RATE_FIELDS = ['inputCentsPerMTok', 'cachedInputCentsPerMTok', 'cacheWriteCentsPerMTok', 'outputCentsPerMTok'] as const;
const keyOf = (provider: Provider) => (provider.apiKeySecretId ?? provider.apiKey?.secretId ? 'in the vault' : 'none');

/** `model=in,cached,write,out`, cents per million tokens (fractions allowed); the model may end in `*`. */
export function parsePrice(entry: string): Price {
  const at = entry.lastIndexOf('=');
  const model = at > 0 ? entry.slice(0, at).trim() : '';
  const rates = at > 0 ? entry.slice(at + 1).split(',').map((part) => part.trim()) : [];
  if (!model || rates.length !== 4 || rates.some((rate) => rate === '' || !Number.isFinite(Number(rate)) || Number(rate) < 0)) {
    throw new CliError('usage', `--price ${JSON.stringify(entry)}: expected model=input,cachedInput,cacheWrite,output in cents per million tokens, each a number >= 0 (e.g. claude-sonnet-4*=300,30,375,1500)`);
  }
  return { model, ...Object.fromEntries(RATE_FIELDS.map((field, index) => [field, Number(rates[index])])) } as Price;
}

function booleanOf(flag: string, value: string | boolean | undefined): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new CliError('usage', `${flag} takes true or false, got ${JSON.stringify(value)}`);
}

/** The key as the API takes it: a secret reference, or the plain value read from stdin or a file. */
async function apiKeyOf(options: Options): Promise<unknown> {
  const sources = [options.apiKeySecret !== undefined, !!options.apiKeyStdin, options.apiKeyFile !== undefined].filter(Boolean).length;
  if (sources > 1) throw new CliError('usage', 'Pass one of --api-key-secret, --api-key-stdin and --api-key-file');
  if (options.apiKeySecret !== undefined) {
    const [secretId, version] = options.apiKeySecret.split('@');
    if (version !== undefined && version !== 'latest' && !/^[1-9]\d*$/.test(version)) throw new CliError('usage', `--api-key-secret ${options.apiKeySecret}: the version after @ is a positive number or latest`);
    return { type: 'secret_ref', secretId, version: version === undefined || version === 'latest' ? 'latest' : Number(version) };
  }
  if (options.apiKeyStdin || options.apiKeyFile !== undefined) {
    return readSecretValue({ valueFile: options.apiKeyFile ?? '-' }, 'The provider key', 'pipe it in (printf %s "$KEY" | keel model-provider ... --api-key-stdin) or pass --api-key-file <path>');
  }
  return undefined;
}

function printProvider(options: Options, provider: Provider, title?: string): void {
  if (options.json) return emit(options, '', provider);
  const { models, apiKey: _apiKey, ...rest } = provider;
  emitRecord({ json: false }, { ...rest, key: keyOf(provider) }, title);
  const prices = models ?? [];
  const lines = prices.length
    ? table([['MODEL', 'INPUT', 'CACHED_INPUT', 'CACHE_WRITE', 'OUTPUT'], ...prices.map((price) => [cell(price.model), ...RATE_FIELDS.map((field) => cell(price[field]))])])
    : ['(no priced models)'];
  emit(options, ['prices (cents per million tokens):', ...lines.map((line) => `  ${line}`)], provider);
}

export async function listCommand(options: Options): Promise<void> {
  const providers = await clientFor(options).get<Provider[]>(path`/api/companies/${companyIdFor(options)}/model-providers`);
  emitList(options, providers, ['id', 'name', 'kind', 'baseUrl', ['DEFAULT', (p: Provider) => (p.isDefault ? 'yes' : '')], ['PRICED_MODELS', (p: Provider) => p.models?.length ?? 0], ['KEY', keyOf]], 'No model providers');
}

export async function getCommand(id: string, options: Options): Promise<void> {
  printProvider(options, await clientFor(options).get<Provider>(path`/api/model-providers/${id}`));
}

/** --allow-unpriced-models and --default, when given, as the body's fields. */
function addSwitches(body: Record<string, unknown>, options: Options): void {
  const allow = booleanOf('--allow-unpriced-models', options.allowUnpricedModels);
  if (allow !== undefined) body.allowUnpricedModels = allow;
  const isDefault = booleanOf('--default', options.default);
  if (isDefault !== undefined) body.isDefault = isDefault;
}

export async function createCommand(options: Options): Promise<void> {
  if (!options.name || !options.kind || !options.baseUrl) throw new CliError('usage', 'model-provider create needs --name, --kind and --base-url');
  const companyId = companyIdFor(options);
  const models = (options.price ?? []).map(parsePrice);
  const body: Record<string, unknown> = { name: options.name, kind: options.kind, baseUrl: options.baseUrl, models };
  addSwitches(body, options);
  // Read last, after every check of the flags: a refused command has not consumed the key.
  const apiKey = await apiKeyOf(options);
  if (apiKey !== undefined) body.apiKey = apiKey;
  const provider = await clientFor(options).post<Provider>(path`/api/companies/${companyId}/model-providers`, body);
  printProvider(options, provider, `Created model provider ${provider.name} (${provider.id})`);
}

export async function updateCommand(id: string, options: Options): Promise<void> {
  const body: Record<string, unknown> = {};
  if (options.name !== undefined) body.name = options.name;
  if (options.baseUrl !== undefined) body.baseUrl = options.baseUrl;
  if (options.clearPrices && options.price?.length) throw new CliError('usage', 'Pass --price entries or --clear-prices, not both');
  if (options.clearPrices) body.models = [];
  if (options.price?.length) body.models = options.price.map(parsePrice);
  addSwitches(body, options);
  const apiKey = await apiKeyOf(options);
  if (apiKey !== undefined) body.apiKey = apiKey;
  if (!Object.keys(body).length) throw new CliError('usage', 'Nothing to update: pass --name, --base-url, --price (replaces the price table), --clear-prices, --allow-unpriced-models, --default or a new key');
  const provider = await clientFor(options).patch<Provider>(path`/api/model-providers/${id}`, body);
  printProvider(options, provider, `Updated model provider ${provider.name}`);
}

export async function deleteCommand(id: string, options: Options): Promise<void> {
  if (!options.yes) throw new CliError('confirmation_required', `Deleting a model provider stops the gateway serving it (runs of its agents fall back to their own credentials); run again with --yes to delete ${id}`);
  const answer = await clientFor(options).delete(path`/api/model-providers/${id}`);
  emit(options, `Deleted model provider ${id}`, answer);
}

/** What `POST .../test` answers: the kernel's summary of one minimal call to the provider. */
interface TestOutcome { ok: boolean; status: number | null; latencyMs: number; error: string | null }

/**
 * One minimal call through the gateway's own path (`POST .../test`): whether the provider
 * answered, in how long, and its own error message when it refused. Exits 1 when it failed.
 */
export async function testCommand(id: string, options: Options): Promise<void> {
  const outcome = await clientFor(options).post<TestOutcome>(path`/api/model-providers/${id}/test`, options.model ? { model: options.model } : {});
  const status = outcome.status ? ` (HTTP ${outcome.status})` : '';
  emit(options, outcome.ok ? `ok: answered in ${outcome.latencyMs} ms${status}` : `failed: ${outcome.error ?? 'no answer'}${status}`, outcome);
  if (!outcome.ok) process.exitCode = 1;
}

const limitsPath = (options: Options) => path`/api/companies/${companyIdFor(options)}/model-gateway/limits`;
type Limits = { callsPerMinute: number | null; tokensPerMinute: number | null };
const limitsLines = (limits: Limits) => [`calls per minute:  ${limits.callsPerMinute ?? 'no limit'}`, `tokens per minute: ${limits.tokensPerMinute ?? 'no limit'}`];

export async function limitsGetCommand(options: Options): Promise<void> {
  const limits = await clientFor(options).get<Limits>(limitsPath(options));
  emit(options, limitsLines(limits), limits);
}

function limitOf(flag: string, value: string): number | null {
  if (value === 'none') return null;
  if (!/^\d+$/.test(value)) throw new CliError('usage', `${flag} takes a whole number or none, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** PUT replaces both limits: a flag not given keeps the limit the server has now. */
export async function limitsSetCommand(options: Options): Promise<void> {
  if (options.callsPerMinute === undefined && options.tokensPerMinute === undefined) throw new CliError('usage', 'Pass --calls-per-minute and/or --tokens-per-minute (a number, or none for no limit)');
  const calls = options.callsPerMinute === undefined ? undefined : limitOf('--calls-per-minute', options.callsPerMinute);
  const tokens = options.tokensPerMinute === undefined ? undefined : limitOf('--tokens-per-minute', options.tokensPerMinute);
  const client = clientFor(options);
  const current = calls === undefined || tokens === undefined ? await client.get<Limits>(limitsPath(options)) : null;
  const limits = await client.put<Limits>(limitsPath(options), { callsPerMinute: calls === undefined ? current!.callsPerMinute : calls, tokensPerMinute: tokens === undefined ? current!.tokensPerMinute : tokens });
  emit(options, ['Limits set', ...limitsLines(limits)], limits);
}
