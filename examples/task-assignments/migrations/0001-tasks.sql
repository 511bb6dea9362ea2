create table assignments (
  company_id uuid not null,
  task_id text not null,
  assignee text not null,
  primary key (company_id, task_id)
);
-- One notification per event: the event id is the key, so a redelivered event changes nothing.
create table notifications (
  event_id uuid primary key,
  company_id uuid not null,
  task_id text not null,
  message text not null,
  received_at timestamptz not null default clock_timestamp()
);
