-- What has been metered of each remote run: the run server reports running totals (in its
-- events and status answers), and each report is metered as the difference to these.
create table metered (
  run_id uuid primary key,
  company_id uuid not null,
  input_tokens bigint not null default 0,
  cached_input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cost_cents bigint not null default 0,
  updated_at timestamptz not null default now()
);
