-- A company's skill library: one row per (company, canonical key). The SKILL.md text and the
-- metadata live in the row; every file of the skill (SKILL.md included) is a row of skill_files.
create table company_skills (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  key text not null check (length(key) between 1 and 512),
  slug text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and length(slug) <= 128),
  name text not null,
  description text,
  markdown text not null,
  -- Where the skill came from: github, skills_sh, url, local_path, project_scan, managed_local,
  -- catalog, service_bundled (metadata.sourceKind), and the locator as the caller wrote it.
  source_type text not null,
  source_locator text,
  source_ref text,
  source_commit text,
  trust_level text not null check (trust_level in ('markdown_only', 'assets', 'scripts_executables')),
  compatibility text not null default 'compatible',
  -- Managed skills (created here) can be edited; imported and bundled ones are read-only.
  editable boolean not null default false,
  required boolean not null default false,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, key)
);
create index company_skills_company_slug on company_skills (company_id, slug);

-- The files of a skill. Text files hold their text; assets may be binary (base64).
create table skill_files (
  skill_id uuid not null references company_skills (id) on delete cascade,
  company_id uuid not null,
  path text not null check (length(path) between 1 and 1024),
  kind text not null check (kind in ('skill', 'reference', 'script', 'asset', 'markdown', 'other')),
  encoding text not null default 'utf8' check (encoding in ('utf8', 'base64')),
  content text not null,
  size_bytes integer not null check (size_bytes >= 0),
  sha256 text not null,
  primary key (skill_id, path)
);
create index skill_files_company on skill_files (company_id);

-- An agent's desired skills, kept here (not inside the agent's adapterConfig) so that an adapter
-- change or a config replace can never drop them. Keys are canonical skill keys.
create table agent_skill_preferences (
  agent_id uuid primary key,
  company_id uuid not null,
  desired_skills jsonb not null default '[]'::jsonb,
  updated_at timestamptz not null default now()
);
create index agent_skill_preferences_company on agent_skill_preferences (company_id);
