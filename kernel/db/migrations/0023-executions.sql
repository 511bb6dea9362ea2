-- Executions: an agent run as a process or an HTTP exchange, supervised by one Keel process
-- (its owner) outside the plugin isolates. The row is the lease: the owner renews lease_until
-- while the execution runs; a process that dies stops renewing, and the next start on the same
-- node (owner_node) or any process's sweeper after the lease expired marks it lost. A cancel is
-- a mark on the row (cancel_requested_at) plus NOTIFY keel_executions: any process can ask, the
-- owner kills. One execution per run of the run ledger.
create table executions (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  agent_id uuid not null references agents (id) on delete cascade,
  run_id uuid not null unique references runs (id) on delete cascade,
  -- The plugin that started it: the only one its events are delivered to.
  plugin text not null,
  kind text not null check (kind in ('process', 'http')),
  status text not null default 'starting'
    check (status in ('starting', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost')),
  owner_instance text not null,
  owner_node text not null,
  lease_until timestamptz not null,
  pid integer,
  exit_code integer,
  signal text,
  http_status integer,
  error_code text,
  cancel_requested_at timestamptz,
  cancel_reason text,
  response jsonb,
  log_bytes bigint not null default 0,
  log_sha256 text,
  output_seq integer not null default 0,
  started_at timestamptz,
  finished_at timestamptz,
  created_at timestamptz not null default now()
);
create index executions_company on executions (company_id, created_at desc);
create index executions_live on executions (lease_until) where status in ('starting', 'running');
create index executions_live_agent on executions (agent_id) where status in ('starting', 'running');

-- The NDJSON log, in chunks appended in order (byte offsets from the start of the log), so any
-- process reads any execution's log by offset while it runs and after.
create table execution_log_chunks (
  execution_id uuid not null references executions (id) on delete cascade,
  byte_offset bigint not null,
  content bytea not null,
  primary key (execution_id, byte_offset)
);

-- Asks the owners of the live executions of an agent (or of a whole company) to cancel them:
-- the mark commits with the change that caused it, and the NOTIFY is sent at commit.
create function keel_private.request_execution_cancel(company uuid, agent uuid, why text)
  returns integer language plpgsql security definer set search_path = public, pg_temp as $$
declare
  marked integer := 0;
  target record;
begin
  for target in
    update executions set cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp()),
                          cancel_reason = coalesce(cancel_reason, why)
     where company_id = company and (agent is null or agent_id = agent) and status in ('starting', 'running')
     returning id
  loop
    perform pg_notify('keel_executions', target.id::text);
    marked := marked + 1;
  end loop;
  return marked;
end $$;
revoke all on function keel_private.request_execution_cancel(uuid, uuid, text) from public;

-- Whatever stops an agent or a company (the board's pause or terminate, a plugin's hold such as
-- a budget hard stop, the archive cascade) goes through its status column: these triggers cancel
-- its executions in that same transaction, whichever path wrote the status.
create function keel_private.agent_stops_executions() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  if new.status in ('paused', 'terminated', 'pending_approval') and new.status is distinct from old.status then
    perform keel_private.request_execution_cancel(new.company_id, new.id, 'agent_' || new.status);
  end if;
  return new;
end $$;
create trigger agents_stop_executions after update of status on agents
  for each row execute function keel_private.agent_stops_executions();

create function keel_private.company_stops_executions() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  if new.status in ('paused', 'archived') and new.status is distinct from old.status then
    perform keel_private.request_execution_cancel(new.id, null, 'company_' || new.status);
  end if;
  return new;
end $$;
create trigger companies_stop_executions after update of status on companies
  for each row execute function keel_private.company_stops_executions();

-- A run closed by anyone else (the plugin's ctx.runs.close, the ledger) takes its execution with
-- it: the process must not outlive its run's token. The executor's own close finds its row
-- already terminal and marks nothing.
create function keel_private.run_stops_execution() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
declare
  target record;
begin
  if new.status not in ('queued', 'running') and old.status in ('queued', 'running') then
    for target in
      update executions set cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp()),
                            cancel_reason = coalesce(cancel_reason, 'run_closed')
       where run_id = new.id and status in ('starting', 'running')
       returning id
    loop
      perform pg_notify('keel_executions', target.id::text);
    end loop;
  end if;
  return new;
end $$;
create trigger runs_stop_execution after update of status on runs
  for each row execute function keel_private.run_stops_execution();

-- An event for one subscriber only (execution.output and execution.finished go to the plugin
-- that started the execution, never to every plugin that declares them): as append_event, with
-- the delivery row written only when that plugin is enabled, granted events.subscribe and
-- declares the event after_commit.
create function keel_private.append_event_to(event_name text, company uuid, entity_type text, entity_id text, payload jsonb, subscriber text)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
  fanned integer;
begin
  perform pg_advisory_xact_lock(727014, hashtext(entity_type || ':' || entity_id));
  insert into keel_events.outbox (name, publisher, company_id, entity_type, entity_id, payload)
  values (event_name, 'kernel', company, entity_type, entity_id, payload)
  returning * into event_row;
  insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id)
  select p.key, event_row.seq, event_row.id, entity_type, entity_id
    from plugins p
   where p.key = subscriber and p.status = 'enabled' and 'events.subscribe' = any (p.granted_capabilities)
     and coalesce(p.manifest -> 'events', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('event', event_name, 'mode', 'after_commit'));
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;
revoke all on function keel_private.append_event_to(text, uuid, text, text, jsonb, text) from public;
