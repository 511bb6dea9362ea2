-- Tables the extension host's contribution points keep for themselves, in a schema no plugin
-- role can use. webhook_deliveries: signatures of verified deliveries, kept until the delivery
-- could no longer be accepted (its timestamp turns stale), so a replay is refused by every
-- kernel process sharing the database.
create schema if not exists keel_host;
revoke all on schema keel_host from public;
create table if not exists keel_host.webhook_deliveries (
  plugin_key text not null references public.plugins (key) on delete cascade,
  endpoint_key text not null,
  signature_hash text not null,
  received_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (plugin_key, endpoint_key, signature_hash)
);
create index if not exists webhook_deliveries_expiry on keel_host.webhook_deliveries (expires_at);
