-- A run's transcript: the typed entries an adapter made of its tool's structured output (init,
-- assistant text, tool calls and results, errors, the result), in order. `source_seq`/`idx` name
-- the output line an entry came from, so a redelivered report adds nothing twice.
create table run_transcript (
  run_id uuid not null references runs (id) on delete cascade,
  company_id uuid not null,
  seq integer not null,
  source_seq bigint not null,
  idx integer not null,
  entry jsonb not null,
  created_at timestamptz not null default clock_timestamp(),
  primary key (run_id, seq),
  unique (run_id, source_seq, idx)
);
