-- The runs that ended in a range of days (GET .../heartbeat-runs/daily): a run counts on the day
-- it finished, or of its last update when it ended without a finish time.
create index runs_company_ended on runs (company_id, (coalesce(finished_at, updated_at)))
  where status in ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost');
