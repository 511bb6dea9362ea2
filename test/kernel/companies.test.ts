import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveIssuePrefixBase, prefixCandidate } from '../../kernel/tenancy/issue-prefix.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { createCompany, insertAgent, snapshot } from './companies-fixtures.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /api/companies', () => {
  it('creates a company with every field of the resource and a generated issue prefix', async () => {
    const res = await t.api.post('/api/companies', {
      name: '  Zephyr Works  ', description: 'Wind tools', budgetMonthlyCents: 5000,
      requireBoardApprovalForNewAgents: true, brandColor: '#12ab9F',
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Zephyr Works',
      description: 'Wind tools',
      status: 'active',
      pauseReason: null,
      pausedAt: null,
      issuePrefix: 'ZW',
      issueCounter: 0,
      budgetMonthlyCents: 5000,
      spentMonthlyCents: 0,
      requireBoardApprovalForNewAgents: true,
      brandColor: '#12ab9F',
      logoAssetId: null,
      logoUrl: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const { rows } = await t.sql.query('select name, budget_monthly_cents, issue_prefix from companies where id = $1', [res.body.id]);
    expect(rows[0]).toEqual({ name: 'Zephyr Works', budget_monthly_cents: '5000', issue_prefix: 'ZW' });
  });

  it('applies defaults for optional fields', async () => {
    const res = await t.api.post('/api/companies', { name: 'Plain' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ description: null, budgetMonthlyCents: 0, requireBoardApprovalForNewAgents: false, brandColor: null, issuePrefix: 'PLA' });
  });

  it('gives colliding names distinct prefixes with a letter suffix', async () => {
    const first = await createCompany(t, { name: 'Quartz' });
    const second = await createCompany(t, { name: 'Quartzite' });
    const third = await createCompany(t, { name: 'quartz!' });
    expect([first.issuePrefix, second.issuePrefix, third.issuePrefix]).toEqual(['QUA', 'QUAA', 'QUAB']);
  });

  it('allocates unique prefixes under concurrent creation', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => t.api.post('/api/companies', { name: 'Racer' })));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    const prefixes = results.map((r) => r.body.issuePrefix);
    expect(new Set(prefixes).size).toBe(8);
    for (const prefix of prefixes) expect(prefix).toMatch(/^RAC[A-Z]*$/);
  });

  it('records activity and emits company.created inside the transaction', async () => {
    const seen: Array<{ companyId: string; name: unknown; inTx: boolean }> = [];
    const off = t.kernel.services.events.hook('company.created', async (tx, payload) => {
      const rows = await tx.query('select id from companies where id = ?', [payload.companyId]);
      seen.push({ companyId: payload.companyId, name: payload.company.name, inTx: rows.length === 1 });
    });
    try {
      const company = await createCompany(t, { name: 'Evented', budgetMonthlyCents: 100 });
      expect(seen).toEqual([{ companyId: company.id, name: 'Evented', inTx: true }]);
      const { rows } = await t.sql.query('select action, entity_type, entity_id, actor_type, actor_id, details from activity_log where company_id = $1', [company.id]);
      expect(rows).toEqual([{
        action: 'company.created', entity_type: 'company', entity_id: company.id, actor_type: 'user', actor_id: 'local-board',
        details: { name: 'Evented', issuePrefix: 'EVE', budgetMonthlyCents: 100, ownerUserId: null },
      }]);
    } finally {
      off();
    }
  });

  it('rolls the company back when an in-transaction hook fails', async () => {
    const before = await snapshot(t);
    const off = t.kernel.services.events.hook('company.created', () => { throw new Error('hook refused'); });
    try {
      const res = await t.api.post('/api/companies', { name: 'Doomed' });
      expect(res.status).toBe(500);
    } finally {
      off();
    }
    expect(await snapshot(t)).toEqual(before);
  });

  it('does not add a membership for the implicit local board', async () => {
    const company = await createCompany(t);
    const { rows } = await t.sql.query('select count(*)::int as n from company_memberships where company_id = $1', [company.id]);
    expect(rows[0].n).toBe(0);
  });

  const invalid: Array<[string, unknown, number, RegExp]> = [
    ['missing name', { description: 'x' }, 400, /^Invalid request body: name is required$/],
    ['blank name', { name: '   ' }, 400, /name must not be blank/],
    ['empty name', { name: '' }, 400, /name must NOT have fewer than 1 characters/],
    ['overlong name', { name: 'x'.repeat(201) }, 400, /name must NOT have more than 200 characters/],
    ['name of the wrong type', { name: 42 }, 400, /name must be string/],
    ['negative cents', { name: 'A', budgetMonthlyCents: -1 }, 400, /budgetMonthlyCents must be >= 0/],
    ['fractional cents', { name: 'A', budgetMonthlyCents: 1.5 }, 400, /budgetMonthlyCents must be integer/],
    ['cents as a string', { name: 'A', budgetMonthlyCents: '100' }, 400, /budgetMonthlyCents must be integer/],
    ['non-boolean approval flag', { name: 'A', requireBoardApprovalForNewAgents: 'yes' }, 400, /requireBoardApprovalForNewAgents must be boolean/],
    ['bad brand colour', { name: 'A', brandColor: 'red' }, 400, /brandColor must match pattern/],
    ['an array body', [{ name: 'A' }], 400, /^Request body must be a JSON object$/],
  ];
  for (const [label, body, status, message] of invalid) {
    it(`refuses ${label} and stores nothing`, async () => {
      const before = await snapshot(t);
      const res = await t.api.post('/api/companies', body);
      expect(res.status).toBe(status);
      expect(res.body.error).toMatch(message);
      expect(await snapshot(t)).toEqual(before);
    });
  }

  it('refuses malformed JSON and other content types', async () => {
    const before = await snapshot(t);
    const malformed = await t.api.request('POST', '/api/companies', { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/^Malformed JSON body/);
    const text = await t.api.request('POST', '/api/companies', { rawBody: 'name=A', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(text.status).toBe(415);
    expect(text.body).toEqual({ error: 'Content-Type must be application/json', code: 'unsupported_media_type' });
    const empty = await t.api.request('POST', '/api/companies');
    expect(empty.status).toBe(400);
    expect(empty.body.error).toBe('Invalid request body: name is required');
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('GET /api/companies', () => {
  it('lists companies in name order and hides archived ones unless asked', async () => {
    const archived = await createCompany(t, { name: 'aaa Archived' });
    await t.sql.query("update companies set status = 'archived', archived_at = now() where id = $1", [archived.id]);
    const res = await t.api.get('/api/companies');
    expect(res.status).toBe(200);
    const names = res.body.map((c: any) => c.name);
    expect(names).toEqual([...names].sort((a: string, b: string) => a.toLowerCase().localeCompare(b.toLowerCase())));
    expect(res.body.some((c: any) => c.id === archived.id)).toBe(false);
    const all = await t.api.get('/api/companies?includeArchived=true');
    expect(all.status).toBe(200);
    expect(all.body.find((c: any) => c.id === archived.id)).toMatchObject({ status: 'archived', name: 'aaa Archived' });
    expect(all.body.length).toBe(res.body.length + 1);
  });

  it('refuses a malformed includeArchived', async () => {
    const res = await t.api.get('/api/companies?includeArchived=maybe');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('Invalid query: includeArchived must be boolean');
  });
});

describe('GET /api/companies/stats', () => {
  it('counts non-terminated agents per company, and issues (none yet)', async () => {
    const company = await createCompany(t);
    const empty = await createCompany(t);
    await insertAgent(t, company.id);
    await insertAgent(t, company.id, { status: 'paused' });
    await insertAgent(t, company.id, { status: 'terminated' });
    const res = await t.api.get('/api/companies/stats');
    expect(res.status).toBe(200);
    expect(res.body[company.id]).toEqual({ agentCount: 2, issueCount: 0 });
    expect(res.body[empty.id]).toEqual({ agentCount: 0, issueCount: 0 });
  });
});

describe('GET /api/companies/:companyId', () => {
  it('returns the company', async () => {
    const company = await createCompany(t, { name: 'Fetch Me' });
    const res = await t.api.get(`/api/companies/${company.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(company);
  });

  it('answers 404 for unknown and malformed ids', async () => {
    const unknown = await t.api.get('/api/companies/00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'Company not found', code: 'not_found' });
    const malformed = await t.api.get('/api/companies/not-a-uuid');
    expect(malformed.status).toBe(404);
    expect(malformed.body.error).toBe('Company not found');
  });
});

describe('issue prefix derivation', () => {
  it('uses initials of several words and the first letters of one', () => {
    expect(deriveIssuePrefixBase('Acme')).toBe('ACM');
    expect(deriveIssuePrefixBase('Big Red Dog')).toBe('BRD');
    expect(deriveIssuePrefixBase('one two three four five')).toBe('OTTF');
    expect(deriveIssuePrefixBase('Émile & Zoë')).toBe('EZ');
    expect(deriveIssuePrefixBase('3D Systems')).toBe('DS');
    expect(deriveIssuePrefixBase('Q')).toBe('QX');
    expect(deriveIssuePrefixBase('1234 !!')).toBe('CMP');
    expect(prefixCandidate('AB', 0)).toBe('AB');
    expect(prefixCandidate('AB', 1)).toBe('ABA');
    expect(prefixCandidate('AB', 26)).toBe('ABZ');
    expect(prefixCandidate('AB', 27)).toBe('ABAA');
  });
});
