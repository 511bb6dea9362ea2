import { useState } from 'react';
import { KeelApiError } from '@keel/sdk/client';
import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, useLoad } from '../ui.tsx';

interface Skill { id: string; key: string; slug: string; name: string; description: string | null; sourceType: string; attachedAgentCount: number }
interface CatalogSkill { id: string; key: string; slug: string; name: string; description: string | null; kind: string; category: string | null }
interface Policy { schemaVersion: 1; revision: number; defaultEffect: 'allow' | 'deny'; rules: unknown[]; materialized: boolean }

/** The company's skills (create, install from the catalog, read and edit SKILL.md, remove) and its skill policy. */
export function SkillsPage({ companyId }: { companyId: string }) {
  const base = `/api/companies/${companyId}`;
  const skills = useLoad(() => api.get<Skill[]>(`${base}/skills`), [companyId]);
  const catalog = useLoad(() => api.get<CatalogSkill[]>('/api/skills/catalog'), []);
  const [open, setOpen] = useState<{ skill: Skill; content: string; editable: boolean } | null>(null);
  return (
    <section>
      <h1>Skills</h1>
      {skills.loading && !skills.data ? <Loading what="skills" /> : null}
      <ErrorNote error={skills.error} />
      <Paged label="Company skills" items={skills.data ?? []} empty="No skills yet. Write one under “New skill” or install one from the catalog below." render={(skill) => (
        <li key={skill.id} className="row-item">
          <button type="button" className="link" onClick={async () => {
            const file = await api.get<{ content: string; editable: boolean }>(`${base}/skills/${skill.id}/files`);
            setOpen({ skill, content: file.content, editable: file.editable });
          }}>{skill.name}</button>
          <span className="muted">{skill.slug} · {skill.sourceType} · {skill.attachedAgentCount} agents</span>
          <ActionButton kind="danger" label={`Remove ${skill.name}`} action={async () => { await api.delete(`${base}/skills/${skill.id}`); setOpen(null); await skills.reload(); }}>Remove</ActionButton>
        </li>
      )} />
      {open ? (
        <div className="card">
          <h2>{open.skill.name}: SKILL.md</h2>
          {open.editable ? (
            <Form label="Edit SKILL.md" submit="Save SKILL.md" onSubmit={async (fields) => {
              await api.patch(`${base}/skills/${open.skill.id}/files`, { path: 'SKILL.md', content: fields.get('content') });
              await skills.reload();
            }}>
              <Field label="SKILL.md" name="content" type="textarea" defaultValue={open.content} />
            </Form>
          ) : <pre className="code" tabIndex={0}>{open.content}</pre>}
        </div>
      ) : null}
      <div className="grid2">
        <div className="card">
          <h2>New skill</h2>
          <Form label="New skill" submit="Create skill" onSubmit={async (fields) => {
            await api.post(`${base}/skills`, { name: fields.get('name'), description: fields.get('description') || undefined });
            await skills.reload();
          }}>
            <Field label="Name" name="name" required />
            <Field label="Description" name="description" />
          </Form>
        </div>
        <div className="card">
          <h2>Catalog</h2>
          <ErrorNote error={catalog.error} />
          <Paged label="Catalog skills" size={20} items={catalog.data ?? []} empty="The catalog is empty: no plugin offers skills. Write your own under “New skill”." render={(entry) => (
            <li key={entry.id} className="row-item">
              <span>{entry.name}</span><span className="muted">{entry.kind}{entry.category ? ` · ${entry.category}` : ''}</span>
              <ActionButton label={`Install ${entry.name}`} action={async () => { await api.post(`${base}/skills/install-catalog`, { catalogSkillId: entry.id }); await skills.reload(); }}>Install</ActionButton>
            </li>
          )} />
        </div>
      </div>
      <PolicyEditor companyId={companyId} />
    </section>
  );
}

/** The skill policy document: default effect and rules (JSON), saved against the revision it was read at; the API's issues are listed. */
function PolicyEditor({ companyId }: { companyId: string }) {
  const policy = useLoad(() => api.get<Policy>(`/api/companies/${companyId}/skill-policy`), [companyId]);
  const [issues, setIssues] = useState<Array<{ path: unknown; message: string }>>([]);
  if (policy.error) return <ErrorNote error={policy.error} />;
  if (!policy.data) return <Loading what="the skill policy" />;
  const p = policy.data;
  return (
    <div className="card">
      <h2>Skill policy</h2>
      <p className="muted" data-testid="policy-revision">Revision {p.revision}{p.materialized ? '' : ' (the open default; nothing stored)'}</p>
      <Form label="Skill policy" submit="Save policy" onSubmit={async (fields) => {
        setIssues([]);
        let rules: unknown;
        try { rules = JSON.parse(String(fields.get('rules') || '[]')); } catch { throw new Error('Rules must be a JSON array'); }
        try {
          await api.put(`/api/companies/${companyId}/skill-policy`, { schemaVersion: 1, defaultEffect: fields.get('defaultEffect'), rules, expectedRevision: p.revision });
        } catch (error) {
          if (error instanceof KeelApiError && error.issues) setIssues(error.issues);
          throw error;
        }
        await policy.reload();
      }}>
        <Field label="Default effect" name="defaultEffect">
          <select name="defaultEffect" defaultValue={p.defaultEffect}><option>allow</option><option>deny</option></select>
        </Field>
        <Field label="Rules (JSON array)" name="rules" type="textarea" defaultValue={JSON.stringify(p.rules, null, 2)} />
      </Form>
      {issues.length ? <ul className="error" aria-label="Policy problems">{issues.map((issue, index) => <li key={index}>{Array.isArray(issue.path) ? issue.path.join('.') : String(issue.path)}: {issue.message}</li>)}</ul> : null}
      <ActionButton action={async () => { await api.delete(`/api/companies/${companyId}/skill-policy`); await policy.reload(); }}>Reset to the open default</ActionButton>
    </div>
  );
}
