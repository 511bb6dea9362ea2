-- A company's consent to sharing its feedback traces beyond this instance: given or withdrawn by
-- a board user through PATCH /api/companies/{companyId}; the kernel stamps when and by whom, and
-- which version of the sharing terms was agreed to. All null until a board user first decides.
alter table companies
  add column feedback_data_sharing_enabled boolean,
  add column feedback_data_sharing_consent_at timestamptz,
  add column feedback_data_sharing_consent_by_user_id text,
  add column feedback_data_sharing_terms_version text;
