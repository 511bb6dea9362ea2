-- A run's spend is read by its id (GET .../costs/by-run): the events of one run, not a scan of the company's.
create index cost_events_run on cost_events (company_id, heartbeat_run_id) where heartbeat_run_id is not null;
