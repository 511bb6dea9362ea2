-- The agent each company designated as its summarizer (the only writer of summaries).
create table summarizers (
  company_id uuid primary key,
  agent_id uuid not null,
  designated_by_user_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One slot per company, scope and slot key; scope_id is null for the workspaces overview.
create table summary_slots (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  scope_kind text not null check (scope_kind in ('project', 'project_workspace', 'workspaces_overview')),
  scope_id uuid,
  slot_key text not null check (slot_key in ('header')),
  document_id uuid,
  status text not null default 'idle' check (status in ('idle', 'generating', 'failed')),
  failure_reason text,
  generating_issue_id uuid,
  generation_count integer not null default 0,
  last_generated_at timestamptz,
  last_generated_by_agent_id uuid,
  last_model text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((scope_kind = 'workspaces_overview') = (scope_id is null))
);
create unique index summary_slots_identity on summary_slots (company_id, scope_kind, coalesce(scope_id, '00000000-0000-0000-0000-000000000000'::uuid), slot_key);

-- Which slot each generation task was made for: the link a write is checked against (kept as
-- data, never read back out of the task's text).
create table summary_generations (
  issue_id uuid primary key,
  company_id uuid not null,
  slot_id uuid not null references summary_slots (id) on delete cascade,
  summarizer_agent_id uuid not null,
  created_at timestamptz not null default now()
);
create index summary_generations_slot on summary_generations (slot_id);

create table summary_documents (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  slot_id uuid not null unique references summary_slots (id) on delete cascade,
  title text,
  format text not null default 'markdown',
  body text not null,
  latest_revision_id uuid,
  latest_revision_number integer not null,
  created_by_agent_id uuid,
  updated_by_agent_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Append-only: a write adds a revision, nothing changes one.
create table summary_revisions (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  document_id uuid not null references summary_documents (id) on delete cascade,
  revision_number integer not null,
  title text,
  format text not null default 'markdown',
  body text not null,
  change_summary text,
  created_by_agent_id uuid,
  created_by_run_id uuid,
  created_at timestamptz not null default now(),
  unique (document_id, revision_number)
);

-- Durable events handled, in the transaction of their effects (delivery is at least once).
create table handled_events (
  event_id text primary key,
  handled_at timestamptz not null default now()
);
