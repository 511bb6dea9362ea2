-- One row per address: `address_key` is the lower-cased address, so Ann@x.org and ann@x.org
-- are one entry; the address is kept as first given.
create table waitlist_entries (
  id uuid primary key default gen_random_uuid(),
  address text not null,
  address_key text not null unique,
  created_at timestamptz not null default now()
);

-- Fixed-window counters of POST /api/waitlist/, shared by every Keel process: `subject` is
-- the lower-cased address (scope 'address') or the host's opaque client key (scope 'client').
create table waitlist_counters (
  scope text not null check (scope in ('address', 'client')),
  subject text not null,
  window_start timestamptz not null,
  count integer not null,
  primary key (scope, subject, window_start)
);
create index waitlist_counters_window on waitlist_counters (window_start);
