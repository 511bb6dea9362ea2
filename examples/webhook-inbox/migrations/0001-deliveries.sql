create table deliveries (
  id bigserial primary key,
  event text not null,
  payload jsonb not null,
  bytes integer not null,
  received_at timestamptz not null default now()
);
create index deliveries_event_idx on deliveries (event, id desc);
