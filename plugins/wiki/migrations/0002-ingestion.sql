-- Event ingestion (issues, comments, documents of the work plugin into the default space's raw/).
-- Off until a board user turns it on for the company.
create table ingestion_settings (
  company_id uuid primary key,
  enabled boolean not null default false,
  updated_by_type text not null,
  updated_by_id text not null,
  updated_at timestamptz not null default now()
);

-- Events already handled: deliveries come at least once, an event id is ingested once.
create table ingested_events (
  event_id text primary key,
  company_id uuid not null,
  created_at timestamptz not null default now()
);

-- Positions order ingested material: a source gets a new one each time its content changes.
create sequence ingest_positions;

-- One source file per issue (raw/issues/<identifier>.md of the default space).
create table ingested_sources (
  company_id uuid not null,
  issue_id uuid not null,
  identifier text not null,
  path text not null,
  hash text not null,
  characters integer not null,
  truncated boolean not null,
  position bigint not null,
  updated_at timestamptz not null default now(),
  primary key (company_id, issue_id)
);
create index ingested_sources_position on ingested_sources (company_id, position);

-- How far the maintainer has processed ingested material: sources with a larger position are new.
create table ingestion_cursors (
  company_id uuid primary key,
  position bigint not null default 0,
  updated_at timestamptz not null default now()
);

-- Characters of cursor windows handed to one run (a routine run processes a bounded amount).
create table cursor_run_usage (
  company_id uuid not null,
  run_id text not null,
  characters integer not null default 0,
  updated_at timestamptz not null default now(),
  primary key (company_id, run_id)
);
