-- Database backups taken by any Keel process of the instance (manual or scheduled), and the
-- schedule's lease: one row whose last_started_at a process advances with a conditional
-- update before it backs up, so that several processes on one database take one scheduled
-- backup per interval between them (kernel/backup/backup-schedule.ts).
create table database_backups (
  id uuid primary key default gen_random_uuid(),
  trigger text not null check (trigger in ('manual', 'scheduled')),
  -- The Keel process that took it (host and pid), and where the file went.
  process text not null,
  file text not null,
  directory text not null,
  size_bytes bigint not null,
  pruned_count integer not null,
  started_at timestamptz not null,
  finished_at timestamptz not null
);
create index database_backups_started on database_backups (started_at desc);

create table database_backup_schedule (
  id boolean primary key default true check (id),
  last_started_at timestamptz,
  holder text
);
insert into database_backup_schedule (id) values (true);
