-- The run ledger keeps a run's liveness (status, token, open and close), not its outcome: usage
-- and result live with the plugin that ran the run (the runtime's runs, answered by its
-- run-outcomes service). No production path ever wrote these two columns (the ledger's close
-- was never given usage or result by a capability), so dropping them loses nothing.
alter table runs drop column if exists usage_json, drop column if exists result_json;
