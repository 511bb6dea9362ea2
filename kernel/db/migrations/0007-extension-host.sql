-- The extension host: installed plugins, their migrations, configuration, folder mounts and
-- job runs; and the narrow bridge through which plugin roles reach kernel data.

create table plugins (
  key text primary key,
  package_name text,
  version text not null,
  display_name text not null,
  description text,
  source_kind text not null check (source_kind in ('first_party', 'example', 'local_path', 'npm')),
  source_path text not null,
  tag text,
  manifest jsonb not null,
  status text not null default 'installed' check (status in ('installed', 'enabled', 'disabled', 'failed')),
  -- What the operator granted on enable; a capability not listed here is refused by the broker.
  granted_capabilities text[] not null default '{}',
  first_granted_at timestamptz,
  config jsonb not null default '{}'::jsonb,
  db_namespace text,
  last_error text,
  installed_at timestamptz not null default now(),
  enabled_at timestamptz,
  disabled_at timestamptz,
  updated_at timestamptz not null default now()
);

create table plugin_migrations (
  plugin_key text not null references plugins (key) on delete cascade,
  name text not null,
  checksum text not null,
  applied_at timestamptz not null default now(),
  primary key (plugin_key, name)
);

create table plugin_folder_mounts (
  plugin_key text not null references plugins (key) on delete cascade,
  company_id uuid not null references companies (id) on delete cascade,
  folder_key text not null,
  path text not null,
  updated_at timestamptz not null default now(),
  primary key (plugin_key, company_id, folder_key)
);

create table plugin_job_runs (
  id uuid primary key default gen_random_uuid(),
  plugin_key text not null references plugins (key) on delete cascade,
  job_key text not null,
  trigger text not null check (trigger in ('schedule', 'manual')),
  status text not null check (status in ('running', 'succeeded', 'failed')),
  error text,
  started_at timestamptz not null default now(),
  finished_at timestamptz
);
create index plugin_job_runs_idx on plugin_job_runs (plugin_key, job_key, started_at desc);

create table plugin_logs (
  id bigserial primary key,
  plugin_key text not null references plugins (key) on delete cascade,
  level text not null,
  message text not null,
  fields jsonb,
  created_at timestamptz not null default now()
);
create index plugin_logs_idx on plugin_logs (plugin_key, id desc);

-- Plugin roles may reach nothing of the kernel's schema, make no temporary tables, and see
-- only the bridge functions granted to them.
revoke all on schema public from public;
do $$ begin execute format('revoke temporary on database %I from public', current_database()); end $$;

create schema keel_private;
revoke all on schema keel_private from public;
create table keel_private.bridge_key (
  id boolean primary key default true check (id),
  key bytea not null
);
insert into keel_private.bridge_key (key)
  values (sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')));

create schema keel_bridge;
revoke all on schema keel_bridge from public;

-- Writes an activity entry for a plugin invocation. The kernel signed the invocation identity
-- (company, actor, run, plugin role, expiry) with the bridge key; the function verifies that
-- signature, that the caller is the plugin's own role, and takes identity only from it.
create function keel_bridge.record_activity(invocation text, signature text, action text, entity_type text, entity_id text, details jsonb)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  k bytea;
  claims jsonb;
begin
  select b.key into k from keel_private.bridge_key b;
  if encode(sha256(k || sha256(k || convert_to(invocation, 'UTF8'))), 'hex') <> signature then
    raise exception 'invalid invocation signature' using errcode = 'insufficient_privilege';
  end if;
  claims := invocation::jsonb;
  if claims ->> 'role' <> session_user then
    raise exception 'invocation signed for another plugin' using errcode = 'insufficient_privilege';
  end if;
  if (claims ->> 'exp')::bigint < extract(epoch from now())::bigint then
    raise exception 'invocation expired' using errcode = 'insufficient_privilege';
  end if;
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  values ((claims ->> 'companyId')::uuid, claims ->> 'actorType', claims ->> 'actorId', action, entity_type, entity_id,
          (claims ->> 'agentId')::uuid, (claims ->> 'runId')::uuid,
          coalesce(details, '{}'::jsonb) || jsonb_build_object('plugin', claims ->> 'plugin'), 0, '', '');
end $$;
revoke all on function keel_bridge.record_activity(text, text, text, text, text, jsonb) from public;
