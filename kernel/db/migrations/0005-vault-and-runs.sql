-- The secret vault (per-company data keys wrapped by a master key kept outside the database,
-- immutable encrypted versions, grants of secrets to agents), the run ledger and the security
-- audit trail of secret reads.

create table vault_data_keys (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  master_key_id text not null,
  wrapped_key bytea not null,
  nonce bytea not null,
  tag bytea not null,
  created_at timestamptz not null default now(),
  rewrapped_at timestamptz
);
create unique index vault_data_keys_company on vault_data_keys (company_id);
create index vault_data_keys_master on vault_data_keys (master_key_id);

create table secrets (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  name text not null,
  provider text not null,
  external_ref text,
  latest_version integer not null default 1,
  description text,
  created_by_agent_id uuid,
  created_by_user_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, name)
);
create index secrets_company_idx on secrets (company_id, created_at desc);

-- Versions are immutable: the kernel only inserts them, and the database refuses updates.
create table secret_versions (
  secret_id uuid not null references secrets (id) on delete cascade,
  version integer not null check (version >= 1),
  company_id uuid not null references companies (id) on delete cascade,
  data_key_id uuid not null references vault_data_keys (id),
  nonce bytea not null,
  ciphertext bytea not null,
  tag bytea not null,
  external_ref text,
  created_by_agent_id uuid,
  created_by_user_id text,
  created_at timestamptz not null default now(),
  primary key (secret_id, version)
);

create function keel_secret_versions_immutable() returns trigger language plpgsql as $$
begin
  raise exception 'secret versions are immutable' using errcode = 'insufficient_privilege';
end $$;
create trigger secret_versions_no_update before update on secret_versions
  for each row execute function keel_secret_versions_immutable();

create table agent_secret_grants (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  agent_id uuid not null references agents (id) on delete cascade,
  secret_id uuid not null references secrets (id) on delete cascade,
  key text not null,
  delivery text not null check (delivery in ('env', 'api', 'both')),
  version_selector text not null default 'latest',
  projection_class text not null default 'standard',
  description text,
  created_by_user_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (agent_id, key)
);

create table runs (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  agent_id uuid not null references agents (id) on delete cascade,
  status text not null default 'running' check (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
  invocation_source text not null default 'on_demand',
  trigger_detail text,
  adapter_type text,
  opened_by_plugin text,
  context jsonb,
  usage_json jsonb,
  result_json jsonb,
  close_reason text,
  token_expires_at timestamptz,
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  created_at timestamptz not null default now()
);
create index runs_agent_idx on runs (agent_id, created_at desc);
create index runs_company_idx on runs (company_id, created_at desc);

create table security_audit_log (
  id bigserial primary key,
  company_id uuid,
  actor_type text not null,
  actor_id text not null,
  event text not null,
  agent_id uuid,
  run_id uuid,
  secret_id uuid,
  secret_version integer,
  details jsonb,
  created_at timestamptz not null default now()
);
create index security_audit_log_company_idx on security_audit_log (company_id, created_at desc);

create function keel_security_audit_guard() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' and old.company_id is not null
     and current_setting('keel.activity_purge_company', true) = old.company_id::text then
    return old;
  end if;
  raise exception 'security_audit_log is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
end $$;
create trigger security_audit_log_guard before update or delete on security_audit_log
  for each row execute function keel_security_audit_guard();
