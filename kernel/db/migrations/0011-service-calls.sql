-- Service calls made with an idempotency key: the first call with a key claims it, runs the
-- provider's service and stores its result; a retry with the same key and input gets that
-- result again without running the service twice, in any Keel process. Plugin roles get no
-- privilege on keel_host.
create table keel_host.service_calls (
  provider text not null,
  service text not null,
  caller text not null,
  -- The company the call served, or '' for a call that served none.
  company_key text not null,
  idempotency_key text not null,
  input_hash text not null,
  status text not null check (status in ('running', 'done')),
  result jsonb,
  claimed_at timestamptz not null default now(),
  completed_at timestamptz,
  primary key (provider, service, caller, company_key, idempotency_key)
);
create index service_calls_completed on keel_host.service_calls (completed_at);
