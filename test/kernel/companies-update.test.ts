import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentToken, createCompany, insertAgent, snapshot, uploadLogo } from './companies-fixtures.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

async function lastActivity(companyId: string) {
  const { rows } = await t.sql.query('select action, actor_type, actor_id, agent_id, details from activity_log where company_id = $1 order by seq desc limit 1', [companyId]);
  return rows[0];
}

async function assetExists(id: string): Promise<boolean> {
  const { rows } = await t.sql.query('select 1 from assets where id = $1', [id]);
  return rows.length === 1;
}

describe('PATCH /api/companies/:companyId (board)', () => {
  it('updates every board field, records the changes and emits company.updated', async () => {
    const company = await createCompany(t, { name: 'Patchable', description: 'old' });
    const events: any[] = [];
    const off = t.kernel.services.events.hook('company.updated', (_tx, payload) => { events.push(payload); });
    try {
      const res = await t.api.patch(`/api/companies/${company.id}`, {
        name: ' Patched ', description: null, budgetMonthlyCents: 900, brandColor: '#000000',
        requireBoardApprovalForNewAgents: true, status: 'paused', unknownField: 'ignored',
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: company.id, name: 'Patched', description: null, budgetMonthlyCents: 900, brandColor: '#000000',
        requireBoardApprovalForNewAgents: true, status: 'paused', issuePrefix: company.issuePrefix,
      });
      expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(company.updatedAt));
      const changes = { name: 'Patched', description: null, budgetMonthlyCents: 900, brandColor: '#000000', requireBoardApprovalForNewAgents: true, status: 'paused' };
      expect(events).toEqual([{ companyId: company.id, company: res.body, changes, actor: { actorType: 'user', actorId: 'local-board' } }]);
      expect(await lastActivity(company.id)).toMatchObject({
        action: 'company.updated', actor_type: 'user',
        details: { changes, previous: { name: 'Patchable', description: 'old', budgetMonthlyCents: 0, brandColor: null, requireBoardApprovalForNewAgents: false, status: 'active' } },
      });
      const { rows } = await t.sql.query('select paused_at, pause_reason from companies where id = $1', [company.id]);
      expect(rows[0].pause_reason).toBe('manual');
      expect(rows[0].paused_at).not.toBeNull();
      const get = await t.api.get(`/api/companies/${company.id}`);
      expect(get.body).toEqual(res.body);
    } finally {
      off();
    }
  });

  it('only reports fields whose value really changes', async () => {
    const company = await createCompany(t, { name: 'Same', budgetMonthlyCents: 10 });
    const events: any[] = [];
    const off = t.kernel.services.events.hook('company.updated', (_tx, payload) => { events.push(payload); });
    try {
      const res = await t.api.patch(`/api/companies/${company.id}`, { name: 'Same', budgetMonthlyCents: 20 });
      expect(res.status).toBe(200);
      expect(events.map((e) => e.changes)).toEqual([{ budgetMonthlyCents: 20 }]);
    } finally {
      off();
    }
  });

  const invalid: Array<[string, unknown, RegExp]> = [
    ['an unknown status', { status: 'deleted' }, /status must be one of "active", "paused", "archived"/],
    ['negative cents', { budgetMonthlyCents: -5 }, /budgetMonthlyCents must be >= 0/],
    ['a blank name', { name: ' ' }, /name must not be blank/],
    ['a null name', { name: null }, /name must be string/],
    ['a bad colour', { brandColor: '#12345' }, /brandColor must match pattern/],
    ['a non-uuid logo id', { logoAssetId: 'logo-1' }, /logoAssetId must match pattern/],
    ['a non-boolean flag', { requireBoardApprovalForNewAgents: 1 }, /requireBoardApprovalForNewAgents must be boolean/],
    ['no updatable field', { other: 1 }, /^At least one updatable field must be provided$/],
    ['an empty body', {}, /^At least one updatable field must be provided$/],
  ];
  for (const [label, body, message] of invalid) {
    it(`refuses ${label} and changes nothing`, async () => {
      const company = await createCompany(t);
      const before = await snapshot(t);
      const res = await t.api.patch(`/api/companies/${company.id}`, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
      expect(await snapshot(t)).toEqual(before);
      expect((await t.api.get(`/api/companies/${company.id}`)).body).toEqual(company);
    });
  }

  it('refuses malformed JSON and non-JSON bodies', async () => {
    const company = await createCompany(t);
    const before = await snapshot(t);
    const malformed = await t.api.request('PATCH', `/api/companies/${company.id}`, { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/^Malformed JSON body/);
    const text = await t.api.request('PATCH', `/api/companies/${company.id}`, { rawBody: 'x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(await snapshot(t)).toEqual(before);
  });

  it('answers 404 for an unknown company', async () => {
    const res = await t.api.patch('/api/companies/00000000-0000-4000-8000-000000000000', { name: 'X' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('Company not found');
  });
});

describe('logoAssetId', () => {
  it('attaches a logo of the same company and derives logoUrl', async () => {
    const company = await createCompany(t);
    const logo = await uploadLogo(t, company.id);
    const res = await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: logo.assetId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ logoAssetId: logo.assetId, logoUrl: `/api/assets/${logo.assetId}/content` });
  });

  it('removes the previous asset when the logo is replaced, and the current one when cleared', async () => {
    const company = await createCompany(t);
    const first = await uploadLogo(t, company.id);
    const second = await uploadLogo(t, company.id);
    await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: first.assetId });
    const again = await t.api.patch(`/api/companies/${company.id}/branding`, { logoAssetId: first.assetId });
    expect(again.status).toBe(200);
    expect(await assetExists(first.assetId)).toBe(true);
    const replaced = await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: second.assetId });
    expect(replaced.status).toBe(200);
    expect(await assetExists(first.assetId)).toBe(false);
    expect(await assetExists(second.assetId)).toBe(true);
    expect((await lastActivity(company.id)).details).toMatchObject({ removedLogoAssetId: first.assetId });
    const cleared = await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ logoAssetId: null, logoUrl: null });
    expect(await assetExists(second.assetId)).toBe(false);
  });

  it('refuses another company\'s asset with 422 and changes nothing', async () => {
    const company = await createCompany(t);
    const other = await createCompany(t);
    const foreign = await uploadLogo(t, other.id);
    const before = await snapshot(t);
    for (const path of [`/api/companies/${company.id}`, `/api/companies/${company.id}/branding`]) {
      const res = await t.api.patch(path, { logoAssetId: foreign.assetId, name: 'Should not stick' });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ error: 'Logo asset must belong to the same company', code: 'logo_asset_company_mismatch', details: { logoAssetId: foreign.assetId } });
    }
    expect(await snapshot(t)).toEqual(before);
    expect((await t.api.get(`/api/companies/${company.id}`)).body.name).toBe(company.name);
  });

  it('refuses unknown assets and assets that are not logo uploads with 422', async () => {
    const company = await createCompany(t);
    const unknown = await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: '00000000-0000-4000-8000-000000000001' });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ error: 'Logo asset not found', code: 'logo_asset_not_found' });
    const { rows } = await t.sql.query(
      `with blob as (insert into blobs (company_id, owner, content_type, byte_size, sha256) values ($1, 'kernel', 'image/png', 1, 'x') returning id)
       insert into assets (company_id, kind, content_type, byte_size, sha256, blob_id) select $1, 'attachment', 'image/png', 1, 'x', id from blob returning id`, [company.id]);
    const attachment = await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: rows[0].id });
    expect(attachment.status).toBe(422);
    expect(attachment.body.code).toBe('logo_asset_kind_mismatch');
    expect(await assetExists(rows[0].id)).toBe(true);
  });
});

describe('agents', () => {
  it('lets a CEO agent change branding fields through PATCH and /branding', async () => {
    const company = await createCompany(t);
    const ceo = await insertAgent(t, company.id, { role: 'ceo' });
    const token = await agentToken(t, ceo, company.id);
    const logo = await uploadLogo(t, company.id, undefined, undefined, token);
    const res = await t.api.patch(`/api/companies/${company.id}`, { name: 'CEO Named', description: 'by ceo', brandColor: '#abcdef', logoAssetId: logo.assetId }, { token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'CEO Named', description: 'by ceo', brandColor: '#abcdef', logoAssetId: logo.assetId });
    expect(await lastActivity(company.id)).toMatchObject({ action: 'company.updated', actor_type: 'agent', actor_id: ceo, agent_id: ceo });
    const branding = await t.api.patch(`/api/companies/${company.id}/branding`, { brandColor: '#111111' }, { token });
    expect(branding.status).toBe(200);
    expect(branding.body.brandColor).toBe('#111111');
    expect((await lastActivity(company.id)).action).toBe('company.branding_updated');
  });

  it('refuses a CEO agent any non-branding field, changing nothing', async () => {
    const company = await createCompany(t);
    const ceo = await insertAgent(t, company.id, { role: 'ceo' });
    const token = await agentToken(t, ceo, company.id);
    const before = await snapshot(t);
    for (const body of [{ budgetMonthlyCents: 1 }, { name: 'X', status: 'archived' }, { requireBoardApprovalForNewAgents: false }, { issuePrefix: 'ZZ' }]) {
      const res = await t.api.patch(`/api/companies/${company.id}`, body, { token });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('branding_fields_only');
      expect(res.body.error).toMatch(/^CEO agents may only change branding fields \(name, description, brandColor, logoAssetId\); refused: /);
      const branding = await t.api.patch(`/api/companies/${company.id}/branding`, body, { token });
      expect(branding.status).toBe(403);
    }
    expect(await snapshot(t)).toEqual(before);
  });

  it('refuses non-CEO agents and agents of another company', async () => {
    const company = await createCompany(t);
    const other = await createCompany(t);
    const engineer = await agentToken(t, await insertAgent(t, company.id, { role: 'engineer' }), company.id);
    const foreignCeo = await agentToken(t, await insertAgent(t, other.id, { role: 'ceo' }), other.id);
    const before = await snapshot(t);
    const patch = await t.api.patch(`/api/companies/${company.id}`, { name: 'Nope' }, { token: engineer });
    expect(patch.status).toBe(403);
    expect(patch.body).toEqual({ error: 'Only CEO agents or board users may update company settings', code: 'ceo_required' });
    const branding = await t.api.patch(`/api/companies/${company.id}/branding`, { name: 'Nope' }, { token: engineer });
    expect(branding.status).toBe(403);
    expect(branding.body).toEqual({ error: 'Only CEO agents can update company branding', code: 'ceo_required' });
    const cross = await t.api.patch(`/api/companies/${company.id}/branding`, { name: 'Nope' }, { token: foreignCeo });
    expect(cross.status).toBe(403);
    expect(cross.body).toEqual({ error: 'Agent key cannot access another company', code: 'company_access_denied' });
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('PATCH /api/companies/:companyId/branding (board)', () => {
  it('updates branding fields', async () => {
    const company = await createCompany(t);
    const res = await t.api.patch(`/api/companies/${company.id}/branding`, { name: 'Branded', description: 'new', brandColor: '#00ff00' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Branded', description: 'new', brandColor: '#00ff00' });
    expect(await lastActivity(company.id)).toMatchObject({ action: 'company.branding_updated', details: { changes: { name: 'Branded', description: 'new', brandColor: '#00ff00' } } });
  });

  it('refuses non-branding fields and empty bodies with 400', async () => {
    const company = await createCompany(t);
    const before = await snapshot(t);
    const status = await t.api.patch(`/api/companies/${company.id}/branding`, { status: 'paused' });
    expect(status.status).toBe(400);
    expect(status.body.error).toBe('Only branding fields (name, description, brandColor, logoAssetId) can be changed through /branding; use PATCH /api/companies/{companyId} for status');
    const empty = await t.api.patch(`/api/companies/${company.id}/branding`, {});
    expect(empty.status).toBe(400);
    expect(empty.body.error).toBe('At least one branding field must be provided');
    const badColour = await t.api.patch(`/api/companies/${company.id}/branding`, { brandColor: 12 });
    expect(badColour.status).toBe(400);
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('status through PATCH', () => {
  it('archiving pauses agents and reactivating resumes only the agents the archive paused', async () => {
    const company = await createCompany(t);
    const working = await insertAgent(t, company.id, { status: 'running' });
    const manuallyPaused = await insertAgent(t, company.id, { status: 'paused', pauseReason: 'manual' });
    const archived = await t.api.patch(`/api/companies/${company.id}`, { status: 'archived' });
    expect(archived.status).toBe(200);
    expect(archived.body.status).toBe('archived');
    expect((await lastActivity(company.id)).details).toMatchObject({ pausedAgentIds: [working] });
    let { rows } = await t.sql.query('select id, status, pause_reason from agents where company_id = $1 order by id', [company.id]);
    expect(rows.find((r: any) => r.id === working)).toMatchObject({ status: 'paused', pause_reason: 'company_archived' });
    const active = await t.api.patch(`/api/companies/${company.id}`, { status: 'active' });
    expect(active.status).toBe(200);
    ({ rows } = await t.sql.query('select id, status, pause_reason from agents where company_id = $1', [company.id]));
    expect(rows.find((r: any) => r.id === working)).toMatchObject({ status: 'idle', pause_reason: null });
    expect(rows.find((r: any) => r.id === manuallyPaused)).toMatchObject({ status: 'paused', pause_reason: 'manual' });
    const { rows: companyRows } = await t.sql.query('select archived_at from companies where id = $1', [company.id]);
    expect(companyRows[0].archived_at).toBeNull();
  });
});
