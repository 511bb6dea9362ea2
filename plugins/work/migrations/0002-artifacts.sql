-- Documents: markdown keyed per issue. The document row holds the latest revision (what a read
-- answers, and what a write compares baseRevisionId against); revisions are only ever added.
create table issue_documents (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  key text not null check (key ~ '^[a-z0-9][a-z0-9_-]*$' and length(key) <= 64),
  title text,
  format text not null default 'markdown' check (format = 'markdown'),
  latest_body text not null,
  latest_revision_id uuid not null,
  latest_revision_number integer not null,
  created_by_agent_id uuid,
  created_by_user_id text,
  updated_by_agent_id uuid,
  updated_by_user_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (issue_id, key)
);
create index issue_documents_company on issue_documents (company_id, updated_at desc, id desc);

create table issue_document_revisions (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  document_id uuid not null references issue_documents (id) on delete cascade,
  revision_number integer not null check (revision_number >= 1),
  title text,
  body text not null,
  change_summary text,
  created_by_agent_id uuid,
  created_by_user_id text,
  run_id uuid,
  created_at timestamptz not null default now(),
  unique (document_id, revision_number)
);

-- Attachments: the bytes are a blob of the kernel's store (owned by this plugin); the row keeps
-- what lists and the artifact projection show without asking the kernel.
create table issue_attachments (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  blob_id uuid not null unique,
  filename text,
  content_type text not null,
  byte_size bigint not null check (byte_size >= 0),
  sha256 text not null,
  created_by_agent_id uuid,
  created_by_user_id text,
  run_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index issue_attachments_issue on issue_attachments (issue_id, created_at, id);
create index issue_attachments_company on issue_attachments (company_id, updated_at desc, id desc);

-- Work products: what work on an issue produced (a pull request, a preview, a file, ...).
create table work_products (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  type text not null check (type in ('preview_url', 'runtime_service', 'pull_request', 'branch', 'commit', 'artifact', 'document')),
  status text not null default 'active'
    check (status in ('active', 'ready_for_review', 'approved', 'changes_requested', 'merged', 'closed', 'failed', 'archived', 'draft')),
  review_state text not null default 'none' check (review_state in ('none', 'needs_board_review', 'approved', 'changes_requested')),
  title text not null,
  url text,
  external_id text,
  is_primary boolean not null default false,
  metadata jsonb,
  -- A deleted attachment leaves the work product in place, without its file.
  attachment_id uuid references issue_attachments (id) on delete set null,
  created_by_agent_id uuid,
  created_by_user_id text,
  run_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index work_products_issue on work_products (issue_id, created_at, id);
create index work_products_company on work_products (company_id, updated_at desc, id desc);
create index work_products_attachment on work_products (attachment_id) where attachment_id is not null;
-- At most one primary work product per issue (writes lock the issue, so setting one clears the others first).
create unique index work_products_one_primary on work_products (issue_id) where is_primary;
