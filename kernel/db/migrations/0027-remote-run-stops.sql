-- How to ask a run server to stop a remote run (executions/remote-run.ts), stored once the run
-- server has named its run: the stop URL and the non-secret headers, plus which headers carry
-- secrets of the agent's configuration (header, config key, scheme; never a value). A Keel
-- process that dies mid-run cannot ask; the process that marks the execution lost does, with
-- the secrets revealed from the agent's configuration again.
alter table executions add column remote_stop jsonb;
