-- Cost events as reported. The idempotency key is unique per company, so a retried report is
-- stored once; the fingerprint tells a retry from a different report under the same key.
create table cost_events (
  id uuid primary key,
  company_id uuid not null,
  agent_id uuid not null,
  project_id uuid,
  issue_id uuid,
  goal_id uuid,
  heartbeat_run_id uuid,
  provider text not null,
  biller text not null,
  model text not null,
  billing_type text not null,
  billing_code text,
  cost_cents bigint not null check (cost_cents >= 0),
  input_tokens bigint,
  cached_input_tokens bigint,
  output_tokens bigint,
  occurred_at timestamptz not null,
  created_at timestamptz not null default now(),
  idempotency_key text,
  fingerprint text
);
create unique index cost_events_idempotency on cost_events (company_id, idempotency_key) where idempotency_key is not null;
-- Reads touch raw events only at the partial hours at the edges of a range.
create index cost_events_company_time on cost_events (company_id, occurred_at);

-- Hourly rollups per attribution: every breakdown over whole hours reads these, so its cost
-- follows the hours in the range and the number of distinct attributions, not the events.
create table cost_rollups (
  company_id uuid not null,
  hour timestamptz not null,
  agent_id uuid not null,
  project_id uuid,
  provider text not null,
  biller text not null,
  model text not null,
  billing_type text not null,
  cost_cents bigint not null,
  input_tokens bigint not null,
  cached_input_tokens bigint not null,
  output_tokens bigint not null,
  event_count bigint not null
);
create unique index cost_rollups_key on cost_rollups (company_id, hour, agent_id, project_id, provider, biller, model, billing_type) nulls not distinct;

-- The same per day (UTC): long ranges read days, and hours only at their two ends.
create table cost_rollups_daily (like cost_rollups including defaults);
alter table cost_rollups_daily rename column hour to day;
create unique index cost_rollups_daily_key on cost_rollups_daily (company_id, day, agent_id, project_id, provider, biller, model, billing_type) nulls not distinct;

-- Running totals per scope (company, agent, project) and period ('YYYY-MM' in UTC, or
-- 'lifetime'), updated by the transaction that accepts the events. Budget checks and
-- month-to-date spend read one row each.
create table spend_totals (
  company_id uuid not null,
  scope_type text not null check (scope_type in ('company', 'agent', 'project')),
  scope_id uuid not null,
  period text not null,
  cost_cents bigint not null,
  primary key (company_id, scope_type, scope_id, period)
);

create table budget_policies (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  scope_type text not null check (scope_type in ('company', 'agent', 'project')),
  scope_id uuid not null,
  metric text not null default 'billed_cents' check (metric in ('billed_cents')),
  window_kind text not null check (window_kind in ('calendar_month_utc', 'lifetime')),
  amount bigint not null check (amount >= 0),
  warn_percent integer not null default 80 check (warn_percent between 1 and 100),
  hard_stop_enabled boolean not null default true,
  notify_enabled boolean not null default true,
  is_active boolean not null default true,
  -- Bumped whenever the budget or its thresholds change: incidents are per revision.
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, scope_type, scope_id, metric, window_kind)
);

-- One incident per policy, window, threshold and policy revision: a threshold fires once per
-- window, and again only after the budget (or its thresholds) changed.
create table budget_incidents (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  policy_id uuid not null references budget_policies (id) on delete cascade,
  scope_type text not null,
  scope_id uuid not null,
  metric text not null,
  window_kind text not null,
  window_start timestamptz not null,
  window_end timestamptz,
  threshold_type text not null check (threshold_type in ('soft', 'hard')),
  policy_revision integer not null,
  amount_limit bigint not null,
  amount_observed bigint not null,
  status text not null default 'open' check (status in ('open', 'resolved')),
  resolution text,
  resolution_note text,
  created_at timestamptz not null default now(),
  resolved_at timestamptz,
  unique (policy_id, window_start, threshold_type, policy_revision)
);
create index budget_incidents_open on budget_incidents (company_id, created_at desc) where status = 'open';

create table finance_events (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  kind text not null,
  direction text not null check (direction in ('debit', 'credit')),
  amount_cents bigint not null check (amount_cents >= 0),
  currency text not null default 'USD',
  estimated boolean not null default false,
  biller text,
  description text,
  metadata jsonb,
  occurred_at timestamptz not null default now(),
  created_at timestamptz not null default now()
);
create index finance_events_company_time on finance_events (company_id, occurred_at desc);
