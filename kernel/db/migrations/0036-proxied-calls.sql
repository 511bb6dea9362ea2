-- Proxied model calls (kernel/gateway/): one row per request a plugin answered with respondProxy,
-- written while the upstream is being reached and committed before the first byte reaches the
-- client. The row is the lease: the Keel process that holds the exchange (owner_instance) renews
-- lease_until and checkpoints the usage metered so far every few seconds; a process that dies
-- stops renewing, and any process's sweeper marks the row 'lost' with its last checkpoint. The
-- terminal row and the proxy.finished event (for the answering plugin alone) are one transaction.
create table proxied_calls (
  id uuid primary key,
  -- The plugin that answered the proxy: the only one its event is delivered to.
  plugin text not null,
  company_id uuid not null references companies (id) on delete cascade,
  owner_instance text not null,
  lease_until timestamptz not null,
  status text not null default 'running'
    check (status in ('running', 'completed', 'cut', 'upstream_error', 'broken', 'client_gone', 'timed_out', 'lost')),
  meter text not null,
  -- The price the plugin named (PriceRates), null when unpriced.
  rates jsonb,
  -- The plugin's report, handed back unchanged in proxy.finished.
  report jsonb not null,
  usage jsonb not null default '{"inputTokens":0,"cachedInputTokens":0,"cacheWriteTokens":0,"outputTokens":0}',
  usage_estimated boolean not null default true,
  model text,
  http_status integer,
  cost_cents integer not null default 0,
  first_byte_ms integer,
  started_at timestamptz not null default now(),
  finished_at timestamptz
);
create index proxied_calls_company on proxied_calls (company_id, started_at desc);
create index proxied_calls_live on proxied_calls (lease_until) where status = 'running';
