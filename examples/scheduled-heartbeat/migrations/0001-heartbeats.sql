create table heartbeats (
  id bigserial primary key,
  beat_at timestamptz not null default now(),
  invocation_id text not null
);
