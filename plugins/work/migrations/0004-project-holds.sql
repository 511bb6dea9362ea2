-- A project is paused while any hold is on it (a budget hard stop of the costs plugin, for
-- one), as companies and agents are in the kernel. A paused project takes no new work: no
-- issue is created in it or moved into it, and none of its issues is checked out.
alter table projects add column paused_at timestamptz, add column pause_reason text;

create table project_holds (
  company_id uuid not null,
  project_id uuid not null references projects (id) on delete cascade,
  holder text not null,
  reason text not null,
  created_at timestamptz not null default clock_timestamp(),
  primary key (project_id, holder, reason)
);
