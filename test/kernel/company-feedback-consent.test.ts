import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentToken, createCompany, insertAgent } from './companies-fixtures.ts';

/**
 * A company's feedback-sharing consent: decided by a board user through PATCH
 * /api/companies/{companyId}, stamped by the kernel, on the company only once decided.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

const CONSENT_FIELDS = ['feedbackDataSharingEnabled', 'feedbackDataSharingConsentAt', 'feedbackDataSharingConsentByUserId', 'feedbackDataSharingTermsVersion'];
const consentRow = async (id: string) => (await t.sql.query(
  `select feedback_data_sharing_enabled as enabled, feedback_data_sharing_consent_at as at, feedback_data_sharing_consent_by_user_id as by,
          feedback_data_sharing_terms_version as terms from companies where id = $1`, [id])).rows[0];

describe('company feedback-sharing consent', () => {
  it('is absent until a board user decides, then stamped with when and by whom, and kept on withdrawal', async () => {
    const company = await createCompany(t, { name: 'Consenting' });
    for (const field of CONSENT_FIELDS) expect(company).not.toHaveProperty(field);
    expect(Object.keys((await t.api.get(`/api/companies/${company.id}`)).body)).not.toContain('feedbackDataSharingEnabled');

    const before = Date.now();
    const res = await t.api.patch(`/api/companies/${company.id}`, { feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: '2026-01', feedbackDataSharingConsentAt: '2000-01-01T00:00:00.000Z' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ feedbackDataSharingEnabled: true, feedbackDataSharingConsentByUserId: 'local-board', feedbackDataSharingTermsVersion: '2026-01' });
    // The time is the kernel's, never the caller's.
    expect(Date.parse(res.body.feedbackDataSharingConsentAt)).toBeGreaterThanOrEqual(before - 1000);
    expect((await t.api.get(`/api/companies/${company.id}`)).body).toEqual(res.body);
    const { rows } = await t.sql.query("select details from activity_log where company_id = $1 and action = 'company.updated' order by seq desc limit 1", [company.id]);
    expect(rows[0].details.changes).toEqual({ feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: '2026-01' });

    const withdrawn = await t.api.patch(`/api/companies/${company.id}`, { feedbackDataSharingEnabled: false });
    expect(withdrawn.body).toMatchObject({ feedbackDataSharingEnabled: false, feedbackDataSharingTermsVersion: '2026-01' });
    expect(Date.parse(withdrawn.body.feedbackDataSharingConsentAt)).toBeGreaterThanOrEqual(Date.parse(res.body.feedbackDataSharingConsentAt));
    // Consenting again keeps the terms agreed to before unless new ones are named.
    const again = await t.api.patch(`/api/companies/${company.id}`, { feedbackDataSharingEnabled: true });
    expect(again.body).toMatchObject({ feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: '2026-01' });
  });

  it('refuses consent without terms, terms without a decision, bad values and agents, changing nothing', async () => {
    const company = await createCompany(t, { name: 'Undecided' });
    const ceo = await agentToken(t, await insertAgent(t, company.id, { role: 'ceo' }), company.id);
    const cases: Array<[Record<string, unknown>, number, string, string?]> = [
      [{ feedbackDataSharingEnabled: true }, 422, 'feedback_terms_version_required'],
      [{ feedbackDataSharingTermsVersion: '2026-01' }, 422, 'feedback_sharing_decision_required'],
      [{ feedbackDataSharingEnabled: 'yes' }, 400, 'validation_failed'],
      [{ feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: '' }, 400, 'validation_failed'],
      [{ feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: 'v '.repeat(40) }, 400, 'validation_failed'],
      [{ feedbackDataSharingEnabled: true, feedbackDataSharingTermsVersion: '2026-01' }, 403, 'branding_fields_only', ceo],
    ];
    for (const [body, status, code, token] of cases) {
      const res = await t.api.patch(`/api/companies/${company.id}`, body, token ? { token } : undefined);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect(await consentRow(company.id)).toEqual({ enabled: null, at: null, by: null, terms: null });
  });
});
