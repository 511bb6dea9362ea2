-- Executions not tied to an agent run: a workspace's runtime service (a long-running process)
-- or workspace command (a job that runs to an exit code), started on a board user's behalf by
-- the plugin that owns the workspace (ctx.workspaceProcesses). They share the executions
-- table, and with it the one supervision mechanism: the lease, the sweeper, the cancel mark
-- plus NOTIFY keel_executions, the log chunks and execution.finished to the starting plugin.
-- `target` says which; agent and run are set for agent runs only. `workspace_ref` is the
-- plugin's own id of the workspace, `label` the service's or command's name, `started_by`
-- the board user, `grace_sec` how long a stop waits between SIGTERM and SIGKILL.
alter table executions alter column run_id drop not null;
alter table executions alter column agent_id drop not null;
alter table executions add column target text not null default 'agent_run'
  check (target in ('agent_run', 'workspace_service', 'workspace_command'));
alter table executions add column workspace_ref text;
alter table executions add column label text;
alter table executions add column started_by text;
alter table executions add column grace_sec integer;
alter table executions add constraint executions_target_shape check (
  (target = 'agent_run' and run_id is not null and agent_id is not null)
  or (target <> 'agent_run' and run_id is null and agent_id is null and workspace_ref is not null and started_by is not null)
);
create index executions_workspace on executions (plugin, company_id, workspace_ref, created_at desc) where workspace_ref is not null;
