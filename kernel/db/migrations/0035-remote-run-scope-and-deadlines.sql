-- The deadline of an execution (its timeout), set when it starts running: the heartbeat of the
-- process that owns it stops it once the deadline passes, whatever its output does (a stream of
-- malformed events cannot hold it open), and any process reads it.
alter table executions add column deadline_at timestamptz;
-- The remote run an execution follows, as its status URL on the run server (the run server's id
-- under the agent's apiBaseUrl). One execution per remote run: a run server that answers a
-- create with a run another Keel run already follows is not followed (executions/remote-run.ts).
alter table executions add column remote_run_url text;
create unique index executions_remote_run_url on executions (remote_run_url) where remote_run_url is not null;
