-- Routines: an agent woken on a fixed interval while the routine is active. A plugin's managed
-- routines (the managed-routine service, callers granted routines.managed) are made paused; the
-- board resumes and pauses them. Slots are claimed under the row lock, like heartbeat timers,
-- so a slot wakes its agent once across every Keel process however often its job was queued.
create table routines (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  key text not null,
  managed_by_plugin text not null,
  agent_id uuid not null,
  title text not null,
  interval_sec integer not null check (interval_sec between 60 and 2592000),
  status text not null default 'paused' check (status in ('paused', 'active')),
  last_slot bigint not null default 0,
  next_slot bigint,
  last_fired_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (company_id, managed_by_plugin, key)
);
create index routines_company on routines (company_id, created_at, id);
