create table imports (
  id bigserial primary key,
  company_id uuid not null,
  name text not null,
  lines jsonb not null,
  imported integer not null default 0,
  status text not null default 'queued' check (status in ('queued', 'importing', 'done')),
  job_id uuid
);
create table imported_lines (
  import_id bigint not null references imports (id) on delete cascade,
  position integer not null,
  text text not null,
  primary key (import_id, position)
);
