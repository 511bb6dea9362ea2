-- Environments: where runs of a company's agents work. A `local` environment is a root
-- directory on this machine (inside a folder an operator mounted for the company) and
-- environment variables (plain values or secret references, never secret values).
create table environments (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  name text not null check (length(name) between 1 and 200),
  description text,
  driver text not null check (driver in ('local', 'ssh', 'sandbox', 'plugin')),
  status text not null default 'active' check (status in ('active', 'archived')),
  config jsonb not null default '{}'::jsonb,
  env_vars jsonb not null default '{}'::jsonb,
  max_concurrent_leases integer not null default 10 check (max_concurrent_leases between 1 and 1000),
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index environments_company on environments (company_id, created_at, id);

-- A lease is a directory a run gets inside an environment. Leases are handed out under a lock
-- of the environment row (the concurrency limit) and a partial unique index (one active lease
-- per reuse key), so that two Keel processes never hand out the same lease twice.
create table environment_leases (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  environment_id uuid not null references environments (id) on delete cascade,
  policy text not null check (policy in ('ephemeral', 'reusable')),
  reuse_key text,
  path text not null,
  status text not null default 'active' check (status in ('active', 'released')),
  run_id uuid,
  issue_id uuid,
  execution_workspace_id uuid,
  acquired_at timestamptz not null default now(),
  released_at timestamptz,
  release_reason text,
  check ((policy = 'reusable') = (reuse_key is not null))
);
create index environment_leases_environment on environment_leases (environment_id, acquired_at desc, id desc);
create unique index environment_leases_one_active_per_key on environment_leases (environment_id, reuse_key) where status = 'active' and reuse_key is not null;

-- Execution workspaces: a project's working copy a run works in (the project's primary
-- workspace itself, or a git worktree of it), with what was done to it.
create table execution_workspaces (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  project_id uuid not null,
  project_workspace_id uuid not null,
  environment_id uuid references environments (id) on delete set null,
  source_issue_id uuid,
  name text not null check (length(name) between 1 and 200),
  mode text not null check (mode in ('project_primary', 'git_worktree')),
  status text not null default 'active' check (status in ('active', 'idle', 'closed', 'archived')),
  cwd text,
  repo_url text,
  base_ref text,
  branch text,
  metadata jsonb,
  closed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index execution_workspaces_company on execution_workspaces (company_id, created_at desc, id desc);

create table workspace_operations (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  execution_workspace_id uuid not null references execution_workspaces (id) on delete cascade,
  kind text not null,
  action text,
  status text not null check (status in ('succeeded', 'failed', 'refused')),
  message text,
  details jsonb,
  actor_type text,
  actor_id text,
  created_at timestamptz not null default clock_timestamp()
);
create index workspace_operations_workspace on workspace_operations (execution_workspace_id, created_at desc, id desc);
