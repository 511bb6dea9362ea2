import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, useLoad, when } from '../ui.tsx';

interface Secret { id: string; name: string; description: string | null; provider: string; latestVersion: number; createdAt: string; updatedAt: string }

/** Secret metadata, create, rotate and delete. Values go to the server and are never shown back. */
export function SecretsPage({ companyId }: { companyId: string }) {
  const secrets = useLoad(() => api.get<Secret[]>(`/api/companies/${companyId}/secrets`), [companyId]);
  return (
    <section>
      <h1>Secrets</h1>
      <div className="card">
        <Form label="New secret" submit="Create secret" onSubmit={async (fields) => {
          await api.post(`/api/companies/${companyId}/secrets`, { name: fields.get('name'), value: fields.get('value'), description: fields.get('description') || undefined });
          await secrets.reload();
        }}>
          <Field label="Name" name="name" required />
          <Field label="Value (write-only)" name="value" type="password" required />
          <Field label="Description" name="description" />
        </Form>
      </div>
      {secrets.loading && !secrets.data ? <Loading what="secrets" /> : null}
      <ErrorNote error={secrets.error} />
      <Paged label="Secrets" items={secrets.data ?? []} empty="No secrets yet. Store an API key or password with the form above; agents then refer to it by name and never see it in their configuration." render={(secret) => (
        <li key={secret.id} className="row-item stack">
          <div><strong>{secret.name}</strong> <span className="muted">{secret.provider} · version {secret.latestVersion} · updated {when(secret.updatedAt)}</span></div>
          {secret.description ? <p className="muted">{secret.description}</p> : null}
          <Form label={`Rotate ${secret.name}`} submit="Rotate" onSubmit={async (fields) => { await api.post(`/api/secrets/${secret.id}/rotate`, { value: fields.get('value') }); await secrets.reload(); }}>
            <Field label={`New value for ${secret.name}`} name="value" type="password" required />
          </Form>
          <ActionButton kind="danger" label={`Delete ${secret.name}`} action={async () => { await api.delete(`/api/secrets/${secret.id}`); await secrets.reload(); }}>Delete</ActionButton>
        </li>
      )} />
    </section>
  );
}
