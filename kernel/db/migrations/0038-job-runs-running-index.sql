-- Every enqueued job's start counts the running attempts of its job key (the concurrency lease,
-- kernel/host/contributions/job-runs.ts acquireSlot) and a scheduled job's start looks for one
-- running: by the older index that read every past run of the key, which grows by one per run
-- (a thousand agents' heartbeats add 60,000 an hour). The running ones are a handful.
create index plugin_job_runs_running on plugin_job_runs (plugin_key, job_key) where status = 'running';
