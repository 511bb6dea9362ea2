-- Company package imports a client may retry (Idempotency-Key). The row remembers how far the
-- import got: the kernel's part commits together with `progress` (the target company and the
-- agents' id map), and each plugin part that committed is added to it, so a retry after a
-- failure resumes with the first part not done and nothing is imported twice. A finished
-- import's answer is replayed; the same key with another request answers 409.
create table company_imports (
  scope_key text not null,
  idempotency_key text not null,
  request_hash text not null,
  status text not null check (status in ('running', 'failed', 'done')),
  company_id uuid references companies (id) on delete cascade,
  progress jsonb not null default '{}'::jsonb,
  result jsonb,
  claimed_at timestamptz not null default now(),
  completed_at timestamptz,
  primary key (scope_key, idempotency_key)
);
create index company_imports_completed on company_imports (completed_at) where status = 'done';
