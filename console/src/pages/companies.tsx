import { api, type Company } from '../api.ts';
import { Link, navigate } from '../router.tsx';
import { Onboarding } from './onboarding.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, Status, useLoad } from '../ui.tsx';

export function CompaniesPage({ onChange }: { onChange: () => Promise<void> }) {
  const companies = useLoad(() => api.get<Company[]>('/api/companies', { includeArchived: true }), []);
  return (
    <section>
      <h1>Companies</h1>
      {companies.data?.length === 0 ? <Onboarding onCreated={async () => { await onChange(); await companies.reload(); }} /> : null}
      {/* On an empty instance the getting-started card leads; this plain form stays one click away. */}
      <details className="card">
        <summary>{companies.data?.length === 0 ? 'New company, without the guide' : 'New company'}</summary>
        <Form label="New company" submit="Create company" onSubmit={async (fields) => {
          const company = await api.post<Company>('/api/companies', {
            name: fields.get('name'), description: fields.get('description') || undefined,
            requireBoardApprovalForNewAgents: fields.get('approval') === 'on',
          });
          await onChange();
          navigate(`/companies/${company.id}/dashboard`);
        }}>
          <Field label="Name" name="name" required />
          <Field label="Description" name="description" type="textarea" />
          <label className="check"><input type="checkbox" name="approval" /> New agents need board approval</label>
        </Form>
      </details>
      {companies.loading && !companies.data ? <Loading what="companies" /> : null}
      <ErrorNote error={companies.error} />
      <Paged label="Companies" items={companies.data ?? []} empty="No companies yet. Start with the guide above: a company, then its first agent." render={(company) => (
        <li key={company.id} className="row-item">
          <Link to={`/companies/${company.id}/dashboard`}>{company.name}</Link>
          <Status value={company.status} />
          <span className="muted">{company.issuePrefix}</span>
          {company.status !== 'archived' ? <ActionButton label={`Archive ${company.name}`} action={async () => { await api.post(`/api/companies/${company.id}/archive`, {}); await companies.reload(); await onChange(); }}>Archive</ActionButton> : null}
        </li>
      )} />
    </section>
  );
}
