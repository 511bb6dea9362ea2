import { api, upload, type Company } from '../api.ts';
import { Link, navigate } from '../router.tsx';
import { PluginLaunchers, PluginSlots } from '../slots.tsx';
import { CompanyDangerZone } from './company-delete.tsx';
import { Onboarding } from './onboarding.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, money, Paged, Status, useLoad } from '../ui.tsx';

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
      <Paged label="Companies" items={companies.data ?? []} empty="No companies yet." render={(company) => (
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

export function CompanyPage({ companyId, onChange }: { companyId: string; onChange: () => Promise<void> }) {
  const company = useLoad(() => api.get<Company>(`/api/companies/${companyId}`), [companyId]);
  if (company.loading && !company.data) return <Loading what="the company" />;
  if (company.error) return <ErrorNote error={company.error} />;
  const c = company.data!;
  return (
    <section>
      <div className="title-row">
        {c.logoUrl ? <img className="logo" src={c.logoUrl} alt={`${c.name} logo`} /> : null}
        <h1>{c.name}</h1>
        <Status value={c.status} />
      </div>
      {c.description ? <p>{c.description}</p> : null}
      <PluginLaunchers placement="company-toolbar" companyId={companyId} />
      <dl className="facts">
        <div><dt>Issue prefix</dt><dd>{c.issuePrefix}</dd></div>
        <div><dt>Monthly budget</dt><dd>{c.budgetMonthlyCents ? money(c.budgetMonthlyCents) : 'none'}</dd></div>
        <div><dt>Spent this month</dt><dd>{money(c.spentMonthlyCents)}</dd></div>
        <div><dt>Hires need approval</dt><dd>{c.requireBoardApprovalForNewAgents ? 'yes' : 'no'}</dd></div>
      </dl>
      <PluginSlots slot="company-dashboard" companyId={companyId} />
      <div className="grid2">
        <div className="card">
          <h2>Settings</h2>
          <Form label="Company settings" submit="Save" onSubmit={async (fields) => {
            await api.patch(`/api/companies/${companyId}`, { name: fields.get('name'), requireBoardApprovalForNewAgents: fields.get('approval') === 'on' });
            await company.reload();
            await onChange();
          }}>
            <Field label="Name" name="name" required defaultValue={c.name} />
            <label className="check"><input type="checkbox" name="approval" defaultChecked={c.requireBoardApprovalForNewAgents} /> New agents need board approval</label>
          </Form>
        </div>
        <div className="card">
          <h2>Branding</h2>
          <Form label="Branding" submit="Save branding" onSubmit={async (fields) => {
            const file = fields.get('logo');
            let logoAssetId: string | undefined;
            if (file instanceof File && file.size > 0) logoAssetId = (await upload<{ assetId?: string; id?: string }>(`/api/companies/${companyId}/logo`, file)).assetId;
            const color = String(fields.get('color') ?? '');
            await api.patch(`/api/companies/${companyId}/branding`, { brandColor: color || null, ...(logoAssetId ? { logoAssetId } : {}) });
            await company.reload();
          }}>
            <Field label="Brand colour" name="color" type="color" defaultValue={c.brandColor ?? '#1f4e79'} />
            <Field label="Logo (PNG, JPEG, WebP, GIF or SVG)" name="logo" type="file" />
          </Form>
        </div>
      </div>
      <CompanyDangerZone company={c} onDeleted={onChange} />
    </section>
  );
}
