-- A workspace's runtime services and workspace commands. Their definitions live on the
-- execution workspace (written by board users only); the kernel runs them
-- (ctx.workspaceProcesses). One state row per defined service holds what runs now or ran
-- last; a command's run, like a service's start, is a workspace operation that stays
-- `running` until its execution ends (execution.finished) and then records the result.
alter table execution_workspaces add column runtime_services jsonb not null default '[]'::jsonb;
alter table execution_workspaces add column workspace_commands jsonb not null default '[]'::jsonb;

create table workspace_runtime_services (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  execution_workspace_id uuid not null references execution_workspaces (id) on delete cascade,
  service_id text not null,
  execution_id uuid not null,
  operation_id uuid,
  status text not null check (status in ('starting', 'running', 'stopped', 'failed', 'exited')),
  exit_code integer,
  signal text,
  error_code text,
  started_at timestamptz not null default now(),
  stopped_at timestamptz,
  unique (execution_workspace_id, service_id)
);
create index workspace_runtime_services_execution on workspace_runtime_services (execution_id);

alter table workspace_operations drop constraint workspace_operations_status_check;
alter table workspace_operations add constraint workspace_operations_status_check check (status in ('running', 'succeeded', 'failed', 'refused'));
alter table workspace_operations add column execution_id uuid;
alter table workspace_operations add column finished_at timestamptz;
create index workspace_operations_execution on workspace_operations (execution_id) where execution_id is not null;
