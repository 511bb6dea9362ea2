-- Spaces of a company's wiki. The default space (slug `default`) keeps its pages in wiki/ and
-- its sources in raw/ at the wiki root; every other space in spaces/<slug>/wiki and /raw.
create table spaces (
  id uuid primary key,
  company_id uuid not null,
  slug text not null,
  name text not null,
  description text,
  status text not null default 'active' check (status in ('active', 'archived')),
  bootstrapped_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  archived_at timestamptz,
  unique (company_id, slug)
);

-- The page index: what search, listings and backlinks read, kept in step with the files on
-- every write through Keel and on every change the folder watch reports. The search vector
-- weighs titles above bodies and uses the `simple` configuration (no stemming: wikis mix
-- languages and code names).
create table pages (
  company_id uuid not null,
  space_slug text not null,
  path text not null,
  title text not null,
  body text not null,
  hash text not null,
  size integer not null,
  updated_at timestamptz not null default now(),
  search tsvector generated always as (
    setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', left(body, 500000)), 'B')
  ) stored,
  primary key (company_id, space_slug, path)
);
create index pages_search on pages using gin (search);

-- Links found in a page: a markdown link resolves to a path (target_path); a [[wiki link]]
-- names a page by path or by its file name without .md (target_key, lower-case).
create table links (
  company_id uuid not null,
  space_slug text not null,
  source_path text not null,
  target_path text,
  target_key text,
  check (target_path is not null or target_key is not null)
);
create index links_source on links (company_id, space_slug, source_path);
create index links_target_path on links (company_id, space_slug, target_path) where target_path is not null;
create index links_target_key on links (company_id, space_slug, target_key) where target_key is not null;

-- Every change to a space: writes, appends, captures, bootstraps, changes seen on disk.
create table operations (
  id uuid primary key,
  company_id uuid not null,
  space_slug text not null,
  kind text not null,
  path text,
  summary text,
  actor_type text not null,
  actor_id text not null,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default clock_timestamp()
);
create index operations_space_time on operations (company_id, space_slug, created_at desc);

create table query_sessions (
  id uuid primary key,
  company_id uuid not null,
  space_slug text not null,
  question text not null,
  actor_type text not null,
  actor_id text not null,
  filed_path text,
  created_at timestamptz not null default now()
);

-- One row per file a tool has written: writers of one file lock its row (an upsert), so a
-- stale-write check and the write that follows it are one step among concurrent writers.
create table file_locks (
  company_id uuid not null,
  path text not null,
  primary key (company_id, path)
);
