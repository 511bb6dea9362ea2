import { useState, type FormEvent } from 'react';
import { KeelApiError } from '@keel/sdk/client';
import { api } from '../api.ts';
import { FieldError, fieldErrorsOf, NO_ERRORS, type FieldErrors } from '../field-errors.tsx';
import { ActionButton, ErrorNote, Loading, Paged, useLoad, when } from '../ui.tsx';
import { keySecretIdOf, KINDS, ProviderForm, type ModelProvider, type SecretRef, type TestOutcome } from './model-provider-form.tsx';

interface Limits { callsPerMinute: number | null; tokensPerMinute: number | null }

/** The provider's `lastTest` once it is newer than `since`: the plugin records it when the call has ended. */
async function outcomeAfter(id: string, since: string | null): Promise<TestOutcome | null> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { lastTest } = await api.get<ModelProvider>(`/api/model-providers/${id}`);
    if (lastTest && lastTest.testedAt !== since) return lastTest;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return null;
}

const outcomeText = (outcome: TestOutcome) =>
  `${outcome.ok ? `Test passed: ${outcome.latencyMs ?? '?'} ms` : `Test failed: ${outcome.error ?? 'no answer'}`}${outcome.status ? ` (HTTP ${outcome.status})` : ''}`;

/**
 * `POST .../test`: one minimal call through the gateway's own path. Its answer is the provider's,
 * passed on as it came (a refusal names the provider's own error); the latency is the outcome the
 * plugin keeps on the provider (`lastTest`) when the call has ended. Keel's own refusal (no model
 * to test with, no key) is shown under the button.
 */
function TestButton({ provider, onTested }: { provider: ModelProvider; onTested: () => Promise<void> }) {
  const [result, setResult] = useState<TestOutcome | null>(null);
  const [model, setModel] = useState('');
  const test = async () => {
    setResult(null);
    let refusal: KeelApiError | null = null;
    try {
      await api.post(`/api/model-providers/${provider.id}/test`, model.trim() ? { model: model.trim() } : {});
    } catch (error) {
      if (!(error instanceof KeelApiError) || error.fromKeel) throw error;
      refusal = error;
    }
    const recorded = await outcomeAfter(provider.id, provider.lastTest?.testedAt ?? null);
    setResult({
      ok: recorded?.ok ?? !refusal, status: recorded?.status ?? refusal?.status ?? null, latencyMs: recorded?.latencyMs ?? null,
      error: refusal?.message ?? recorded?.error ?? null, testedAt: recorded?.testedAt ?? null,
    });
    await onTested();
  };
  return (
    <>
      <label className="field inline"><span>Model to test<span className="sr-only"> with {provider.name}</span></span><input value={model} placeholder="first exact name priced" onChange={(event) => setModel(event.target.value)} /></label>
      <ActionButton label={`Test ${provider.name}`} action={test}>Test</ActionButton>
      {result ? <p role="status" className={result.ok ? undefined : 'error'}>{outcomeText(result)}</p> : null}
    </>
  );
}

/** Delete, after the operator confirms: the provider's runs fall back to the tool's own credentials. */
function DeleteButton({ provider, onDeleted }: { provider: ModelProvider; onDeleted: () => Promise<void> }) {
  const [asking, setAsking] = useState(false);
  if (!asking) return <button type="button" className="danger" aria-label={`Delete ${provider.name}`} onClick={() => setAsking(true)}>Delete</button>;
  return (
    <span className="row" role="group" aria-label={`Confirm deleting ${provider.name}`}>
      <span>Delete {provider.name}? Agents that use it lose it.</span>
      <ActionButton kind="danger" action={async () => { await api.delete(`/api/model-providers/${provider.id}`); await onDeleted(); }}>Yes, delete {provider.name}</ActionButton>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

function ProviderRow({ provider, secrets, onChange }: { provider: ModelProvider; secrets: SecretRef[]; onChange: () => Promise<void> }) {
  const secretId = keySecretIdOf(provider);
  const secretName = secrets.find((secret) => secret.id === secretId)?.name;
  return (
    <li className="row-item stack">
      <div className="row">
        <strong>{provider.name}</strong> <span className="badge">{provider.kind}</span>
        {provider.isDefault ? <span className="badge s-active">default</span> : null}
        <span className="muted wrap-anywhere">{provider.baseUrl}</span>
      </div>
      <p className="muted">
        {provider.models.length} priced {provider.models.length === 1 ? 'model' : 'models'}{provider.allowUnpricedModels ? ' · unpriced models allowed' : ''}
        {' · key: '}{secretId ? `stored in the vault${secretName ? ` (secret ${secretName})` : ''}` : 'none'} · updated {when(provider.updatedAt)}
        {provider.lastTest ? ` · last test ${provider.lastTest.ok ? 'passed' : 'failed'} ${when(provider.lastTest.testedAt)}` : ''}
      </p>
      <div className="row">
        <TestButton provider={provider} onTested={onChange} />
        {provider.isDefault ? null : <ActionButton label={`Make default: ${provider.name}`} action={async () => { await api.patch(`/api/model-providers/${provider.id}`, { isDefault: true }); await onChange(); }}>Make default</ActionButton>}
        <DeleteButton provider={provider} onDeleted={onChange} />
      </div>
      <details>
        <summary>Edit {provider.name}</summary>
        <ProviderForm key={provider.updatedAt} companyId={provider.companyId} provider={provider} secrets={secrets} label={`Edit ${provider.name}`} submit="Save provider" onSaved={onChange} />
      </details>
    </li>
  );
}

/** Calls and tokens per minute for the whole company; an empty field is no limit. */
function LimitsForm({ companyId }: { companyId: string }) {
  const path = `/api/companies/${companyId}/model-gateway/limits`;
  const limits = useLoad(() => api.get<Limits>(path), [companyId]);
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const save = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const fields = new FormData(event.currentTarget);
    const read = (name: string) => { const text = String(fields.get(name) ?? '').trim(); return text === '' ? null : Number(text); };
    setBusy(true);
    setErrors(NO_ERRORS);
    try {
      await api.put(path, { callsPerMinute: read('callsPerMinute'), tokensPerMinute: read('tokensPerMinute') });
      await limits.reload();
    } catch (caught) {
      setErrors(fieldErrorsOf(caught, ['callsPerMinute', 'tokensPerMinute']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="card">
      <h2>Limits</h2>
      <p className="muted">For every call through the gateway by the company's agents; past a limit the gateway answers 429 with <code>retry-after</code>. Empty: no limit.</p>
      {limits.loading && !limits.data ? <Loading what="limits" /> : null}
      <ErrorNote error={limits.error} />
      {limits.data ? (
        <form key={JSON.stringify(limits.data)} className="form" aria-label="Gateway limits" onSubmit={save} noValidate>
          <label className="field"><span>Calls per minute</span><input name="callsPerMinute" type="number" min="1" step="1" defaultValue={limits.data.callsPerMinute ?? ''} /></label>
          <FieldError errors={errors} path="callsPerMinute" />
          <label className="field"><span>Tokens per minute</span><input name="tokensPerMinute" type="number" min="1" step="1" defaultValue={limits.data.tokensPerMinute ?? ''} /></label>
          <FieldError errors={errors} path="tokensPerMinute" />
          <div className="form-actions"><button type="submit" className="primary" disabled={busy} aria-busy={busy}>{busy ? <span className="spinner" aria-hidden="true" /> : null}Save limits</button></div>
          {errors.form ? <p className="error" role="alert">{errors.form}</p> : null}
        </form>
      ) : null}
    </div>
  );
}

/**
 * The company's model providers: the gateway's upstreams, with their keys in the vault (never
 * shown), their price tables and one default per kind; and the company's gateway limits.
 */
export function ModelProvidersPage({ companyId }: { companyId: string }) {
  const providers = useLoad(() => api.get<ModelProvider[]>(`/api/companies/${companyId}/model-providers`), [companyId]);
  // Asked again whenever the providers change: a key typed into the form becomes a new secret.
  const secrets = useLoad(() => api.get<SecretRef[]>(`/api/companies/${companyId}/secrets`), [companyId, providers.data]);
  return (
    <section>
      <h1>Model providers</h1>
      <p className="muted">
        Agents call the gateway at <code>/api/llm/&lt;provider id&gt;/</code> with their run token; Keel calls the provider with the key stored here, meters and prices
        every answer, and refuses or cuts a call a hard stop forbids. The default provider of a kind serves the local coding tools that speak it
        ({KINDS.map(([kind]) => kind).join(', ')}).
      </p>
      {providers.loading && !providers.data ? <Loading what="model providers" /> : null}
      <ErrorNote error={providers.error} />
      <ErrorNote error={secrets.error} />
      {providers.data ? <Paged label="Model providers" items={providers.data} empty="No model providers yet: agents use their tools' own credentials." render={(provider) => (
        <ProviderRow key={provider.id} provider={provider} secrets={secrets.data ?? []} onChange={providers.reload} />
      )} /> : null}
      <details className="card">
        <summary>New model provider</summary>
        <ProviderForm companyId={companyId} secrets={secrets.data ?? []} label="New model provider" submit="Add provider" onSaved={providers.reload} />
      </details>
      <LimitsForm companyId={companyId} />
    </section>
  );
}
