-- Managed instructions bundles: the files Keel keeps for an agent (entry file AGENTS.md unless
-- the bundle names another), written into each process run's working directory. An external
-- bundle is a path in the agent's adapter configuration; Keel stores no file of it.
create table instruction_bundles (
  agent_id uuid primary key,
  company_id uuid not null,
  entry_file text not null default 'AGENTS.md',
  -- The adapter configuration key that holds the external path (instructions-path's adapterConfigKey).
  adapter_config_key text,
  updated_at timestamptz not null default clock_timestamp()
);

create table instruction_files (
  agent_id uuid not null,
  company_id uuid not null,
  path text not null,
  content text not null,
  size_bytes integer not null,
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp(),
  primary key (agent_id, path)
);
