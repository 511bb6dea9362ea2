import { api, upload, type Company } from '../api.ts';
import { Link } from '../router.tsx';
import { CompanyDangerZone } from './company-delete.tsx';
import { ErrorNote, Field, Form, Loading, money, Status, useLoad } from '../ui.tsx';

/**
 * The company's settings: its name and hiring rule, its branding and its danger zone. They were
 * the company's first page; the dashboard is now, and these live one menu entry away.
 */
export function CompanySettingsPage({ companyId, onChange }: { companyId: string; onChange: () => Promise<void> }) {
  const company = useLoad(() => api.get<Company>(`/api/companies/${companyId}`), [companyId]);
  if (company.loading && !company.data) return <Loading what="the company" />;
  if (company.error) return <ErrorNote error={company.error} />;
  const c = company.data!;
  return (
    <section>
      <div className="title-row">
        {c.logoUrl ? <img className="logo" src={c.logoUrl} alt={`${c.name} logo`} /> : null}
        <h1>Settings of {c.name}</h1>
        <Status value={c.status} />
      </div>
      {c.description ? <p>{c.description}</p> : null}
      <dl className="facts">
        <div><dt>Issue prefix</dt><dd>{c.issuePrefix}</dd></div>
        <div><dt>Monthly budget</dt><dd>{c.budgetMonthlyCents ? money(c.budgetMonthlyCents) : 'none'}</dd></div>
        <div><dt>Hires need approval</dt><dd>{c.requireBoardApprovalForNewAgents ? 'yes' : 'no'}</dd></div>
      </dl>
      <p className="muted">The budget is set on the <Link to={`/companies/${companyId}/costs`}>Costs</Link> page.</p>
      <div className="grid2">
        <div className="card">
          <h2>General</h2>
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
