import { useState, type FormEvent } from 'react';
import { api } from '../api.ts';
import { FieldError, fieldErrorsOf, NO_ERRORS, type FieldErrors } from '../field-errors.tsx';

export type ProviderKind = 'anthropic' | 'openai' | 'gemini';
export interface ModelPrice { model: string; inputCentsPerMTok: number; cachedInputCentsPerMTok: number; cacheWriteCentsPerMTok: number; outputCentsPerMTok: number }
export interface ModelProvider {
  id: string; companyId: string; name: string; kind: ProviderKind; baseUrl: string;
  /** The key's vault reference (never its value): the API names it one way or the other. */
  apiKeySecretId?: string | null; apiKey?: { type: 'secret_ref'; secretId: string; version?: number | 'latest' } | null;
  models: ModelPrice[]; allowUnpricedModels: boolean; isDefault: boolean; createdAt: string; updatedAt: string;
  /** The outcome of the last test call, recorded by the plugin when the call ended. */
  lastTest?: TestOutcome | null;
}
export interface TestOutcome { ok: boolean; status: number | null; latencyMs: number | null; error: string | null; testedAt: string | null }

export const KINDS: ReadonlyArray<[ProviderKind, string, string]> = [
  ['anthropic', 'Anthropic (Messages API)', 'https://api.anthropic.com'],
  ['openai', 'OpenAI (Responses and Chat Completions)', 'https://api.openai.com'],
  ['gemini', 'Google Gemini', 'https://generativelanguage.googleapis.com'],
];

export interface SecretRef { id: string; name: string }

export const keySecretIdOf = (provider: ModelProvider): string | null => provider.apiKeySecretId ?? provider.apiKey?.secretId ?? null;

const FIELDS = ['name', 'kind', 'baseUrl', 'apiKey', 'models', 'allowUnpricedModels', 'isDefault'] as const;
const RATES = [
  ['inputCentsPerMTok', 'Input'], ['cachedInputCentsPerMTok', 'Cached input'], ['cacheWriteCentsPerMTok', 'Cache write'], ['outputCentsPerMTok', 'Output'],
] as const;
type PriceRow = Record<'model' | (typeof RATES)[number][0], string>;
type KeySource = 'keep' | 'plain' | 'secret';

const rowOf = (price: ModelPrice): PriceRow => ({
  model: price.model, inputCentsPerMTok: String(price.inputCentsPerMTok), cachedInputCentsPerMTok: String(price.cachedInputCentsPerMTok),
  cacheWriteCentsPerMTok: String(price.cacheWriteCentsPerMTok), outputCentsPerMTok: String(price.outputCentsPerMTok),
});
const EMPTY_ROW: PriceRow = { model: '', inputCentsPerMTok: '', cachedInputCentsPerMTok: '0', cacheWriteCentsPerMTok: '0', outputCentsPerMTok: '' };

/**
 * Rows as the API's price table. A row without a model is left out; a rate that is not a number
 * is sent as null, so the API's refusal names that row and rate (shown beside it).
 */
function pricesOf(rows: PriceRow[]): Array<Record<string, unknown>> {
  return rows.filter((row) => row.model.trim()).map((row) => Object.fromEntries([
    ['model', row.model.trim()],
    ...RATES.map(([key]) => [key, row[key].trim() === '' || !Number.isFinite(Number(row[key])) ? null : Number(row[key])]),
  ]));
}

/**
 * A provider's fields: name, kind, base URL, the key (typed once and stored in the vault, or one
 * of the company's secrets; on an edit kept unless replaced), the price table row by row (cents
 * per million tokens), unpriced models allowed, default of its kind. The API judges every value;
 * its refusal is shown under the field it names.
 */
export function ProviderForm({ companyId, provider, secrets, label, submit, onSaved }: { companyId: string; provider?: ModelProvider; secrets: SecretRef[]; label: string; submit: string; onSaved: () => Promise<void> }) {
  const [name, setName] = useState(provider?.name ?? '');
  const [kind, setKind] = useState<ProviderKind>(provider?.kind ?? 'anthropic');
  const [baseUrl, setBaseUrl] = useState(provider?.baseUrl ?? '');
  const [keySource, setKeySource] = useState<KeySource>(provider ? 'keep' : 'plain');
  const [plainKey, setPlainKey] = useState('');
  const [secretId, setSecretId] = useState('');
  const [rows, setRows] = useState<PriceRow[]>(provider?.models.map(rowOf) ?? [{ ...EMPTY_ROW }]);
  const [allowUnpriced, setAllowUnpriced] = useState(provider?.allowUnpricedModels ?? false);
  const [isDefault, setIsDefault] = useState(provider?.isDefault ?? false);
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const setRow = (index: number, change: Partial<PriceRow>) => setRows(rows.map((row, i) => (i === index ? { ...row, ...change } : row)));
  const chosenSecret = secretId || secrets[0]?.id || '';

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setErrors(NO_ERRORS);
    const body: Record<string, unknown> = { name: name.trim(), baseUrl: baseUrl.trim(), models: pricesOf(rows), allowUnpricedModels: allowUnpriced, isDefault };
    if (!provider) body.kind = kind;
    // The plain key crosses once, to be stored in the vault; it is cleared from the page right after.
    if (keySource === 'plain' && (plainKey || !provider)) body.apiKey = plainKey;
    if (keySource === 'secret') body.apiKey = { type: 'secret_ref', secretId: chosenSecret, version: 'latest' };
    try {
      if (provider) await api.patch(`/api/model-providers/${provider.id}`, body);
      else await api.post(`/api/companies/${companyId}/model-providers`, body);
      setPlainKey('');
      if (!provider) { setName(''); setBaseUrl(''); setRows([{ ...EMPTY_ROW }]); setAllowUnpriced(false); setIsDefault(false); setSecretId(''); }
      await onSaved();
    } catch (caught) {
      setErrors(fieldErrorsOf(caught, FIELDS));
    } finally {
      setBusy(false);
    }
  };

  const storedSecret = provider && keySecretIdOf(provider);
  const storedName = storedSecret ? secrets.find((secret) => secret.id === storedSecret)?.name : undefined;
  return (
    <form className="form" aria-label={label} onSubmit={save} noValidate>
      <label className="field"><span>Name (unique in the company)</span><input required value={name} onChange={(event) => setName(event.target.value)} /></label>
      <FieldError errors={errors} path="name" />
      {provider ? <p className="muted">Kind: {KINDS.find(([value]) => value === provider.kind)?.[1] ?? provider.kind}</p> : (
        <label className="field"><span>Kind</span>
          <select value={kind} onChange={(event) => setKind(event.target.value as ProviderKind)}>{KINDS.map(([value, text]) => <option key={value} value={value}>{text}</option>)}</select>
        </label>
      )}
      <FieldError errors={errors} path="kind" />
      <label className="field"><span>Base URL (the provider's origin, plus any prefix before its versioned paths)</span>
        <input required value={baseUrl} placeholder={KINDS.find(([value]) => value === (provider?.kind ?? kind))?.[2]} onChange={(event) => setBaseUrl(event.target.value)} />
      </label>
      <FieldError errors={errors} path="baseUrl" />
      <fieldset>
        <legend>API key</legend>
        {provider ? <p className="muted">{storedSecret ? `Stored in the vault${storedName ? ` (secret ${storedName})` : ''}.` : 'No key stored.'} It is never shown again.</p> : null}
        <label className="field"><span>Key source</span>
          <select value={keySource} onChange={(event) => setKeySource(event.target.value as KeySource)}>
            {provider ? <option value="keep">keep the stored key</option> : null}
            <option value="plain">type a key (stored in the vault)</option>
            <option value="secret">one of the company's secrets</option>
          </select>
        </label>
        {keySource === 'plain' ? (
          <label className="field"><span>{provider ? 'New API key (write-only)' : 'API key (write-only)'}</span>
            <input type="password" autoComplete="off" value={plainKey} onChange={(event) => setPlainKey(event.target.value)} />
          </label>
        ) : null}
        {keySource === 'secret' ? (
          <label className="field"><span>Secret</span>
            <select value={chosenSecret} onChange={(event) => setSecretId(event.target.value)}>
              {secrets.length === 0 ? <option value="">no secrets: create one on the Secrets page</option> : null}
              {secrets.map((secret) => <option key={secret.id} value={secret.id}>{secret.name}</option>)}
            </select>
          </label>
        ) : null}
        <FieldError errors={errors} path="apiKey" />
      </fieldset>
      <fieldset>
        <legend>Prices (cents per million tokens)</legend>
        <p className="muted">A model is an exact name or a prefix ending in <code>*</code>; the longest match wins.</p>
        {rows.length === 0 ? <p className="muted">No priced models.</p> : null}
        {rows.map((row, index) => (
          <div key={index} role="group" aria-label={`Price ${index + 1}`}>
            <div className="row">
              <label className="field inline"><span>Model</span><input value={row.model} placeholder="claude-sonnet-4*" onChange={(event) => setRow(index, { model: event.target.value })} /></label>
              {RATES.map(([key, text]) => (
                <label key={key} className="field inline"><span>{text}</span>
                  <input type="number" min="0" step="any" inputMode="decimal" value={row[key]} onChange={(event) => setRow(index, { [key]: event.target.value })} />
                </label>
              ))}
              <button type="button" onClick={() => setRows(rows.filter((_, i) => i !== index))}>Remove<span className="sr-only"> price {index + 1}</span></button>
            </div>
            <FieldError errors={errors} path={`models.${index}`} />
          </div>
        ))}
        <div><button type="button" onClick={() => setRows([...rows, { ...EMPTY_ROW }])}>Add price</button></div>
        <FieldError errors={errors} path="models" exact />
      </fieldset>
      <label className="check"><input type="checkbox" checked={allowUnpriced} onChange={(event) => setAllowUnpriced(event.target.checked)} /> Allow models without a price (metered, charged 0 cents)</label>
      <FieldError errors={errors} path="allowUnpricedModels" />
      <label className="check"><input type="checkbox" checked={isDefault} onChange={(event) => setIsDefault(event.target.checked)} /> Default provider of its kind (replaces the current default)</label>
      <FieldError errors={errors} path="isDefault" />
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy} aria-busy={busy}>{busy ? <span className="spinner" aria-hidden="true" /> : null}{submit}</button>
      </div>
      {errors.form ? <p className="error" role="alert">{errors.form}</p> : null}
    </form>
  );
}
