-- One policy document per company; no row is the open default (revision 0). `revision` counts
-- replaces since the last reset; `etag` changes on every write, so a cached compiled policy is
-- recognised as current even across a reset that starts the revisions again.
create table skill_policies (
  company_id uuid primary key,
  revision integer not null check (revision >= 1),
  default_effect text not null check (default_effect in ('allow', 'deny')),
  document jsonb not null,
  etag uuid not null,
  updated_at timestamptz not null default now()
);
