-- Goals: what the company works towards, nested by parent (company > team > agent > task).
create table goals (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  title text not null,
  description text,
  level text not null default 'task' check (level in ('company', 'team', 'agent', 'task')),
  status text not null default 'planned' check (status in ('planned', 'active', 'achieved', 'cancelled')),
  parent_id uuid references goals (id) on delete set null,
  owner_agent_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index goals_company on goals (company_id, created_at, id);

-- Projects group issues; a project is a budget scope of the costs plugin.
create table projects (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  name text not null,
  description text,
  status text not null default 'backlog' check (status in ('backlog', 'planned', 'in_progress', 'completed', 'cancelled')),
  lead_agent_id uuid,
  goal_id uuid references goals (id) on delete set null,
  target_date date,
  color text,
  archived_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index projects_company on projects (company_id, created_at, id);

-- Issues. The identifier (<prefix>-<number>) comes from the company's counter, taken in the
-- creating transaction (issues.number): unique per company, consecutive, no gaps.
create table issues (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_number integer not null,
  identifier text not null,
  title text not null,
  description text,
  status text not null check (status in ('backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked', 'cancelled')),
  priority text not null default 'medium' check (priority in ('critical', 'high', 'medium', 'low')),
  project_id uuid references projects (id) on delete set null,
  goal_id uuid references goals (id) on delete set null,
  parent_id uuid references issues (id) on delete set null,
  assignee_agent_id uuid,
  assignee_user_id text,
  checkout_run_id uuid,
  execution_run_id uuid,
  created_by_agent_id uuid,
  created_by_user_id text,
  origin_kind text not null default 'manual',
  origin_id text,
  billing_code text,
  hidden_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  cancelled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (assignee_agent_id is null or assignee_user_id is null)
);
create unique index issues_identifier on issues (identifier);
create unique index issues_company_number on issues (company_id, issue_number);
-- The list's order (newest first) and its cursor, whole and by its common filters, so that a
-- page costs the same at any size of the company.
create index issues_company_list on issues (company_id, created_at desc, id desc) where hidden_at is null;
create index issues_status_list on issues (company_id, status, created_at desc, id desc) where hidden_at is null;
create index issues_assignee_list on issues (assignee_agent_id, created_at desc, id desc) where assignee_agent_id is not null;
create index issues_project_list on issues (project_id, created_at desc, id desc) where project_id is not null;
create index issues_parent on issues (parent_id) where parent_id is not null;
create index issues_checkout_run on issues (checkout_run_id) where checkout_run_id is not null;

-- "blocks" relations: blocker_id blocks issue_id until the blocker is done or cancelled.
create table issue_blockers (
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  blocker_id uuid not null references issues (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (issue_id, blocker_id),
  check (issue_id <> blocker_id)
);
create index issue_blockers_blocker on issue_blockers (blocker_id);

create table issue_comments (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  author_type text not null check (author_type in ('agent', 'user', 'system')),
  author_agent_id uuid,
  author_user_id text,
  run_id uuid,
  parent_comment_id uuid references issue_comments (id) on delete set null,
  body text not null,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index issue_comments_issue on issue_comments (issue_id, created_at, id);

-- Creates that a client may retry: the key is unique per company and kind.
create table idempotency_keys (
  company_id uuid not null,
  kind text not null,
  key text not null,
  entity_id uuid not null,
  fingerprint text not null,
  created_at timestamptz not null default now(),
  primary key (company_id, kind, key)
);
