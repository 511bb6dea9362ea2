-- Per issue, how many artifacts (documents, attachments, work products) it has and when the
-- newest of them last changed. Kept by every artifact write in its own transaction
-- (artifact-rollups.ts), so that the artifact list grouped by task or parent task finds a page of
-- groups by walking this index rather than every artifact. An issue without artifacts has no row.
create table artifact_rollups (
  issue_id uuid primary key references issues (id) on delete cascade,
  company_id uuid not null,
  artifact_count integer not null,
  latest_at timestamptz not null
);
create index artifact_rollups_company on artifact_rollups (company_id, latest_at desc, issue_id desc);

insert into artifact_rollups (issue_id, company_id, artifact_count, latest_at)
select issue_id, min(company_id::text)::uuid, count(*)::int, max(updated_at)
  from (select issue_id, company_id, updated_at from issue_documents
        union all select issue_id, company_id, updated_at from issue_attachments
        union all select issue_id, company_id, updated_at from work_products) artifacts
 group by issue_id;
