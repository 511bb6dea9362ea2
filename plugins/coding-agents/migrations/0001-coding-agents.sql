-- What a run's tool reported so far, kept while it runs (several Keel processes may handle the
-- batches of its output): the session it works in, whether usage and a result came, the result's
-- text and a failure the output itself named. Removed when the run's end has been reported.
create table tool_runs (
  run_id uuid primary key,
  company_id uuid not null,
  agent_id uuid not null,
  adapter_type text not null,
  execution_id uuid,
  session_before text,
  session_id text,
  saw_usage boolean not null default false,
  saw_result boolean not null default false,
  result jsonb,
  failure jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Usage already metered per tool session, for tools whose usage figures are running totals over
-- a session that later runs resume (Codex's turn.completed.usage): each report is metered as the
-- difference to these.
create table session_usage (
  company_id uuid not null,
  agent_id uuid not null,
  adapter_type text not null,
  session_id text not null,
  input_tokens bigint not null default 0,
  cached_input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cost_micro_usd bigint not null default 0,
  updated_at timestamptz not null default now(),
  primary key (agent_id, adapter_type, session_id)
);
