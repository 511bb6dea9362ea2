-- The artifact list's rows, one per document, attachment and work product, in the shape the
-- list shows them. Kept by every artifact write in its transaction (src/artifact-projection.ts
-- rewrites an issue's rows after the write), so that a page is one walk of one index: newest
-- first in the company, or in one media kind, instead of a union of three tables whose kind and
-- text had to be computed row by row (and whose plan cost more than the page itself).
create table artifacts (
  artifact_id text collate "C" primary key,
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  source text not null check (source in ('document', 'attachment', 'work_product')),
  source_id uuid not null,
  title text not null,
  preview_text text,
  content_type text,
  media_kind text not null,
  document_key text,
  attachment_id uuid,
  url text,
  created_by_agent_id uuid,
  updated_at timestamptz not null,
  search_text text not null
);
create index artifacts_company on artifacts (company_id, updated_at desc, artifact_id desc);
create index artifacts_company_kind on artifacts (company_id, media_kind, updated_at desc, artifact_id desc);
create index artifacts_issue on artifacts (issue_id);

-- The rows of the artifacts written so far, as src/artifact-projection.ts builds them.
insert into artifacts (artifact_id, company_id, issue_id, source, source_id, title, preview_text, content_type, media_kind,
                       document_key, attachment_id, url, created_by_agent_id, updated_at, search_text)
select 'document:' || d.id::text, d.company_id, d.issue_id, 'document', d.id, coalesce(d.title, d.key), left(d.latest_body, 280),
       'text/markdown', 'document', d.key, null, null, d.created_by_agent_id, d.updated_at, d.key || ' ' || d.latest_body
  from issue_documents d
union all
select 'attachment:' || a.id::text, a.company_id, a.issue_id, 'attachment', a.id, coalesce(a.filename, 'attachment'), null,
       a.content_type,
       case when a.content_type like 'image/%' then 'image'
            when a.content_type like 'video/%' then 'video'
            when a.content_type in ('application/pdf', 'text/markdown', 'text/x-markdown', 'text/html') then 'document'
            when a.content_type like 'text/%' or a.content_type = 'application/json' then 'text'
            else 'file' end,
       null, a.id, null, a.created_by_agent_id, a.updated_at, a.content_type
  from issue_attachments a
union all
select 'work_product:' || w.id::text, w.company_id, w.issue_id, 'work_product', w.id, w.title, null, f.content_type,
       case when f.id is null then (case when w.type = 'document' then 'document' else '' end)
            when f.content_type like 'image/%' then 'image'
            when f.content_type like 'video/%' then 'video'
            when f.content_type in ('application/pdf', 'text/markdown', 'text/x-markdown', 'text/html') then 'document'
            when f.content_type like 'text/%' or f.content_type = 'application/json' then 'text'
            else 'file' end,
       null, f.id, w.url, w.created_by_agent_id, w.updated_at, concat_ws(' ', w.type, w.url, w.external_id, f.filename)
  from work_products w left join issue_attachments f on f.id = w.attachment_id;

-- An issue's rollup also says which media kinds its artifacts have: a page of task groups is
-- then read from the rollups alone.
alter table artifact_rollups add column media_kinds text[] not null default '{}';
update artifact_rollups r set media_kinds = kinds.media_kinds
  from (select issue_id, array_agg(distinct media_kind order by media_kind) as media_kinds from artifacts group by issue_id) kinds
 where kinds.issue_id = r.issue_id;
