-- The issue-graph liveness recovery's run lock, one row per company: a run that has findings
-- takes its company's row before it looks for the escalations made already, so that two runs
-- of one company at once take turns and the second finds the first's escalations (no
-- duplicate, no unique-index failure), while runs of different companies never wait.
create table liveness_runs (
  company_id uuid primary key,
  last_run_at timestamptz not null default now()
);
