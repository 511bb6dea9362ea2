-- Project workspaces: where a project's code lives on a machine (a working directory, and the
-- repository it is a copy of). Summary slots of scope `project_workspace` and the skills scan
-- refer to them; execution workspaces are made from them. At most one primary per project,
-- kept by a partial unique index so that two concurrent writes cannot both make one primary.
create table project_workspaces (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  project_id uuid not null references projects (id) on delete cascade,
  name text not null check (length(name) between 1 and 200),
  cwd text check (cwd is null or (length(cwd) <= 4096 and left(cwd, 1) = '/')),
  repo_url text check (repo_url is null or length(repo_url) <= 2048),
  repo_ref text check (repo_ref is null or length(repo_ref) <= 255),
  is_primary boolean not null default false,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index project_workspaces_project on project_workspaces (project_id, created_at, id);
create index project_workspaces_company on project_workspaces (company_id, created_at, id);
create unique index project_workspaces_one_primary on project_workspaces (project_id) where is_primary;
