-- Model providers of a company. The key is never here: a reference to a secret of the
-- company's vault (api_key_secret_id, api_key_version null = the latest version).
create table providers (
  id uuid primary key,
  company_id uuid not null,
  name text not null,
  kind text not null check (kind in ('anthropic', 'openai', 'gemini')),
  base_url text not null,
  api_key_secret_id uuid,
  api_key_version integer,
  models jsonb not null default '[]'::jsonb,
  allow_unpriced_models boolean not null default false,
  is_default boolean not null default false,
  last_test jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index providers_name on providers (company_id, name);
-- One default per kind in a company: a new default clears the old one in the same transaction.
create unique index providers_default on providers (company_id, kind) where is_default;

-- Per-company limits; no row (or a null) means no limit.
create table limits (
  company_id uuid primary key,
  calls_per_minute integer check (calls_per_minute >= 1),
  tokens_per_minute bigint check (tokens_per_minute >= 1),
  updated_at timestamptz not null default now()
);

-- Calls and tokens of a company per minute (the database's clock), counted with single-statement
-- upserts so that several Keel processes count the same minute together.
create table minute_counters (
  company_id uuid not null,
  minute timestamptz not null,
  calls integer not null default 0,
  tokens bigint not null default 0,
  primary key (company_id, minute)
);

-- Proxied calls whose usage was counted (proxy.finished arrives at least once).
create table metered_calls (
  call_id text primary key,
  company_id uuid not null,
  cost_event_id text,
  metered_at timestamptz not null default now()
);
