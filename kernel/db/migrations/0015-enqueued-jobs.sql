-- Enqueued plugin jobs (ctx.jobs.enqueue). The queue itself is pg-boss's (schema keel_jobs);
-- each attempt of an enqueued job is a run in plugin_job_runs, which is also its lease (at most
-- `concurrency` running rows per job key across every Keel process) and where its progress is
-- shown to operators.
alter table plugin_job_runs drop constraint plugin_job_runs_trigger_check;
alter table plugin_job_runs add constraint plugin_job_runs_trigger_check check (trigger in ('schedule', 'manual', 'enqueued'));
alter table plugin_job_runs drop constraint plugin_job_runs_status_check;
alter table plugin_job_runs add constraint plugin_job_runs_status_check check (status in ('running', 'succeeded', 'failed', 'cancelled'));
-- The pg-boss job an enqueued run is an attempt of, the company it serves, and which attempt.
alter table plugin_job_runs add column job_id uuid;
alter table plugin_job_runs add column company_id uuid;
alter table plugin_job_runs add column attempt integer;
-- The latest ctx.progress.report of a running call: { done, total, message }.
alter table plugin_job_runs add column progress jsonb;
alter table plugin_job_runs add column progress_at timestamptz;
create index plugin_job_runs_job_idx on plugin_job_runs (job_id, started_at desc) where job_id is not null;
