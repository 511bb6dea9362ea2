-- The agent runtime. A wakeup is a request to run an agent; a run is one execution of it. A
-- run's id is the id of its run in the kernel's run ledger (opened when the wakeup is
-- accepted), so SERVICE_RUN_ID, the run token's claim and these rows name the same run.

create table wakeups (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  agent_id uuid not null,
  source text not null,
  trigger_detail text not null,
  reason text,
  payload jsonb not null default '{}'::jsonb,
  issue_id uuid,
  project_id uuid,
  idempotency_key text,
  force_fresh_session boolean not null default false,
  -- queued, claimed, coalesced, skipped, completed, failed, cancelled
  status text not null,
  run_id uuid,
  requested_by_type text not null,
  requested_by_id text not null,
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp()
);
-- The same key gives back the same wakeup: a concurrent retry waits on this index for the first.
create unique index wakeups_idempotency on wakeups (company_id, agent_id, idempotency_key) where idempotency_key is not null;
create index wakeups_agent on wakeups (agent_id, created_at);

create table runs (
  id uuid primary key,
  company_id uuid not null,
  agent_id uuid not null,
  wakeup_id uuid not null references wakeups (id),
  -- queued, running, succeeded, failed, cancelled, timed_out, lost
  status text not null default 'queued',
  invocation_source text not null,
  trigger_detail text not null,
  wake_reason text,
  issue_id uuid,
  project_id uuid,
  task_key text not null,
  adapter_type text not null,
  force_fresh_session boolean not null default false,
  execution_id uuid,
  pid integer,
  http_status integer,
  started_at timestamptz,
  finished_at timestamptz,
  exit_code integer,
  signal text,
  error_code text,
  usage_json jsonb,
  result_json jsonb,
  log_bytes bigint not null default 0,
  log_sha256 text,
  session_id_before text,
  session_id_after text,
  cancel_reason text,
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp()
);
create index runs_company_list on runs (company_id, created_at desc, id desc);
create index runs_agent_active on runs (agent_id, created_at) where status in ('queued', 'running');
create index runs_project_active on runs (project_id) where status in ('queued', 'running') and project_id is not null;
create unique index runs_execution on runs (execution_id) where execution_id is not null;

-- One row per agent: its runtime state, and the row dispatch locks to take turns per agent.
create table agent_states (
  agent_id uuid primary key,
  company_id uuid not null,
  session_id text,
  last_run_id uuid,
  last_run_status text,
  last_error text,
  total_runs integer not null default 0,
  succeeded_runs integer not null default 0,
  failed_runs integer not null default 0,
  input_tokens bigint not null default 0,
  cached_input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cost_cents bigint not null default 0,
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp()
);

-- Adapter sessions per agent and task (the bound issue, a payload taskKey, or 'default').
create table task_sessions (
  company_id uuid not null,
  agent_id uuid not null,
  task_key text not null,
  adapter_type text not null,
  session_id text not null,
  last_run_id uuid,
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp(),
  primary key (agent_id, task_key)
);

-- Heartbeat timers: one fires per interval slot (slot n is due at n * interval_sec seconds
-- after the epoch); last_slot is claimed under the row lock, so a slot fires once across processes.
create table heartbeat_timers (
  agent_id uuid primary key,
  company_id uuid not null,
  interval_sec integer not null,
  last_slot bigint not null default 0,
  next_slot bigint not null,
  updated_at timestamptz not null default clock_timestamp()
);

-- Durable deliveries come at least once: each event is handled once, in the transaction of its effects.
create table handled_events (
  event_id text primary key,
  handled_at timestamptz not null default clock_timestamp()
);
