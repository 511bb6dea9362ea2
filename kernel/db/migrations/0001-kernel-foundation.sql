-- Kernel foundation: instance settings, users and sessions, board keys, CLI auth challenges,
-- companies, memberships and grants, agents and their keys and configuration revisions,
-- approvals, assets, resource memberships and the append-only, hash-chained activity log.

create table instance_settings (
  key text primary key,
  value jsonb not null default '{}'::jsonb,
  updated_at timestamptz not null default now()
);

create table users (
  id uuid primary key default gen_random_uuid(),
  email text not null,
  name text,
  password_hash text,
  is_instance_admin boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));
-- At most one instance admin may be claimed through the browser flow; the claim races on this row.
create table instance_claims (
  id boolean primary key default true check (id),
  user_id uuid not null references users (id) on delete cascade,
  claimed_at timestamptz not null default now()
);

create table user_sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references users (id) on delete cascade,
  token_hash text not null unique,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz
);
create index user_sessions_user_idx on user_sessions (user_id);

-- user_id is null for keys minted by the implicit local board of a local_trusted instance.
create table board_api_keys (
  id uuid primary key default gen_random_uuid(),
  user_id uuid references users (id) on delete cascade,
  name text not null,
  key_hash text not null unique,
  key_prefix text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

create table cli_auth_challenges (
  id uuid primary key default gen_random_uuid(),
  secret_hash text not null,
  client_name text,
  requested_key_name text,
  status text not null default 'pending' check (status in ('pending', 'approved', 'cancelled', 'expired', 'consumed')),
  board_api_key_id uuid references board_api_keys (id) on delete set null,
  approved_by_user_id text,
  expires_at timestamptz not null,
  approved_at timestamptz,
  cancelled_at timestamptz,
  consumed_at timestamptz,
  created_at timestamptz not null default now()
);

create table companies (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  description text,
  status text not null default 'active' check (status in ('active', 'paused', 'archived')),
  issue_prefix text not null unique,
  issue_counter integer not null default 0,
  budget_monthly_cents bigint not null default 0 check (budget_monthly_cents >= 0),
  spent_monthly_cents bigint not null default 0,
  require_board_approval_for_new_agents boolean not null default false,
  brand_color text,
  logo_asset_id uuid,
  pause_reason text,
  paused_at timestamptz,
  archived_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table company_memberships (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  principal_type text not null check (principal_type in ('user', 'agent')),
  principal_id text not null,
  role text not null,
  status text not null default 'active' check (status in ('active', 'suspended', 'left')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, principal_type, principal_id)
);
create index company_memberships_principal_idx on company_memberships (principal_type, principal_id);

create table permission_grants (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  principal_type text not null check (principal_type in ('user', 'agent')),
  principal_id text not null,
  permission_key text not null,
  scope jsonb,
  granted_by_user_id text,
  granted_by_agent_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, principal_type, principal_id, permission_key)
);

create table agents (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  name text not null,
  url_key text not null,
  role text not null default 'general',
  title text,
  icon text,
  capabilities text,
  reports_to uuid references agents (id) on delete set null,
  adapter_type text not null default 'process',
  adapter_config jsonb not null default '{}'::jsonb,
  runtime_config jsonb not null default '{}'::jsonb,
  budget_monthly_cents bigint not null default 0 check (budget_monthly_cents >= 0),
  spent_monthly_cents bigint not null default 0,
  status text not null default 'idle' check (status in ('active', 'paused', 'idle', 'running', 'error', 'pending_approval', 'terminated')),
  pause_reason text,
  paused_at timestamptz,
  permissions jsonb not null default '{}'::jsonb,
  metadata jsonb,
  last_heartbeat_at timestamptz,
  created_by_user_id text,
  created_by_agent_id uuid,
  terminated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_company_idx on agents (company_id);
-- Shortnames are unique among the company's agents that are not terminated.
create unique index agents_company_url_key on agents (company_id, url_key) where status <> 'terminated';

create table agent_config_revisions (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  agent_id uuid not null references agents (id) on delete cascade,
  revision_number integer not null,
  source text not null,
  snapshot jsonb not null,
  changed_keys text[] not null default '{}',
  rolled_back_from_revision_id uuid,
  created_by_user_id text,
  created_by_agent_id uuid,
  created_at timestamptz not null default now(),
  unique (agent_id, revision_number)
);

create table agent_api_keys (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id) on delete cascade,
  company_id uuid not null references companies (id) on delete cascade,
  name text not null,
  key_hash text not null unique,
  key_prefix text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index agent_api_keys_agent_idx on agent_api_keys (agent_id);

create table approvals (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  type text not null,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected', 'cancelled')),
  requested_by_agent_id uuid,
  requested_by_user_id text,
  subject_agent_id uuid references agents (id) on delete cascade,
  payload jsonb not null default '{}'::jsonb,
  decision_note text,
  decided_by_user_id text,
  decided_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index approvals_company_status_idx on approvals (company_id, status);

create table assets (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  kind text not null,
  content_type text not null,
  byte_size integer not null,
  sha256 text not null,
  original_filename text,
  data bytea not null,
  created_by_user_id text,
  created_by_agent_id uuid,
  created_at timestamptz not null default now()
);
create index assets_company_idx on assets (company_id);

create table resource_memberships (
  company_id uuid not null references companies (id) on delete cascade,
  user_id text not null,
  resource_type text not null check (resource_type in ('project', 'agent')),
  resource_id uuid not null,
  state text not null check (state in ('joined', 'left')),
  updated_at timestamptz not null default now(),
  primary key (company_id, user_id, resource_type, resource_id)
);

-- The activity log. Entries are chained per company (instance-level entries, company_id null,
-- form their own chain): each row carries the hash of the previous row of its chain and its own
-- hash over its content, so an edit or a removal breaks the chain at that point.
create table activity_chain_heads (
  chain_key text primary key,
  last_seq bigint not null,
  last_hash text not null
);

create table activity_log (
  id uuid primary key default gen_random_uuid(),
  company_id uuid,
  seq bigint not null,
  actor_type text not null check (actor_type in ('agent', 'user', 'system')),
  actor_id text not null,
  action text not null,
  entity_type text not null,
  entity_id text not null,
  agent_id uuid,
  run_id uuid,
  details jsonb,
  created_at timestamptz not null default now(),
  prev_hash text not null,
  hash text not null
);
create index activity_log_company_idx on activity_log (company_id, seq desc);
create index activity_log_entity_idx on activity_log (company_id, entity_type, entity_id);
create index activity_log_agent_idx on activity_log (company_id, agent_id);
create unique index activity_log_chain_seq on activity_log (coalesce(company_id::text, 'instance'), seq);

create function keel_activity_hash(prev_hash text, seq bigint, company_id uuid, actor_type text, actor_id text,
    action text, entity_type text, entity_id text, agent_id uuid, run_id uuid, details jsonb, created_at timestamptz)
  returns text language sql immutable as $$
  select encode(sha256(convert_to(jsonb_build_array(prev_hash, seq, company_id, actor_type, actor_id, action,
    entity_type, entity_id, agent_id, run_id, details,
    to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'UTF8')), 'hex')
$$;

create function keel_activity_append() returns trigger language plpgsql as $$
declare
  head activity_chain_heads%rowtype;
  key text := coalesce(new.company_id::text, 'instance');
begin
  insert into activity_chain_heads (chain_key, last_seq, last_hash)
    values (key, 0, repeat('0', 64)) on conflict (chain_key) do nothing;
  -- The row lock serialises appends per chain, so seq and prev_hash never fork.
  select * into head from activity_chain_heads where chain_key = key for update;
  new.seq := head.last_seq + 1;
  new.prev_hash := head.last_hash;
  new.created_at := clock_timestamp();
  new.hash := keel_activity_hash(new.prev_hash, new.seq, new.company_id, new.actor_type, new.actor_id, new.action,
    new.entity_type, new.entity_id, new.agent_id, new.run_id, new.details, new.created_at);
  update activity_chain_heads set last_seq = new.seq, last_hash = new.hash where chain_key = key;
  return new;
end $$;

create trigger activity_log_append before insert on activity_log
  for each row execute function keel_activity_append();

-- Entries are never updated. The one deletion allowed is the purge of a deleted company's
-- entries, which the kernel announces with the session setting keel.activity_purge_company.
create function keel_activity_guard() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' and old.company_id is not null
     and current_setting('keel.activity_purge_company', true) = old.company_id::text then
    return old;
  end if;
  raise exception 'activity_log is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
end $$;

create trigger activity_log_no_update before update or delete on activity_log
  for each row execute function keel_activity_guard();

create function keel_activity_no_truncate() returns trigger language plpgsql as $$
begin
  raise exception 'activity_log is append-only: TRUNCATE refused' using errcode = 'insufficient_privilege';
end $$;

create trigger activity_log_no_truncate before truncate on activity_log
  for each statement execute function keel_activity_no_truncate();
