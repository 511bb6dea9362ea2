-- Where a cost event's figures come from: `self_reported` (posted with the cost-events route),
-- `adapter` (usage Keel read from a tool's output: the runtime's record-usage(s) reports),
-- `gateway` (metered by Keel's model gateway from the provider's own answer) or
-- `remote_runner` (usage a run server reported for a remote run).
alter table cost_events add column source text not null default 'self_reported'
  check (source in ('self_reported', 'adapter', 'gateway', 'remote_runner'));
-- The runtime's reports were stored under idempotency keys `usage:<key>` before sources existed.
update cost_events set source = 'adapter' where idempotency_key like 'usage:%';

-- Rollups keep the source as one more attribution, so breakdowns can split by it; the existing
-- breakdowns sum over it and read the same figures as before.
alter table cost_rollups add column source text not null default 'self_reported';
alter table cost_rollups_daily add column source text not null default 'self_reported';
drop index cost_rollups_key;
create unique index cost_rollups_key on cost_rollups (company_id, hour, agent_id, project_id, provider, biller, model, billing_type, source) nulls not distinct;
drop index cost_rollups_daily_key;
create unique index cost_rollups_daily_key on cost_rollups_daily (company_id, day, agent_id, project_id, provider, biller, model, billing_type, source) nulls not distinct;

-- Rollups are sums of the events: those of the hours and days holding reports re-marked above
-- are summed again from the events, now per source.
delete from cost_rollups r
 using (select distinct company_id, date_trunc('hour', occurred_at, 'UTC') as hour from cost_events where source = 'adapter') t
 where r.company_id = t.company_id and r.hour = t.hour;
insert into cost_rollups (company_id, hour, agent_id, project_id, provider, biller, model, billing_type, source,
                          cost_cents, input_tokens, cached_input_tokens, output_tokens, event_count)
select e.company_id, date_trunc('hour', e.occurred_at, 'UTC'), e.agent_id, e.project_id, e.provider, e.biller, e.model, e.billing_type, e.source,
       sum(e.cost_cents), coalesce(sum(e.input_tokens), 0), coalesce(sum(e.cached_input_tokens), 0), coalesce(sum(e.output_tokens), 0), count(*)
  from cost_events e
 where (e.company_id, date_trunc('hour', e.occurred_at, 'UTC')) in (select company_id, date_trunc('hour', occurred_at, 'UTC') from cost_events where source = 'adapter')
 group by 1, 2, 3, 4, 5, 6, 7, 8, 9;
delete from cost_rollups_daily r
 using (select distinct company_id, date_trunc('day', occurred_at, 'UTC') as day from cost_events where source = 'adapter') t
 where r.company_id = t.company_id and r.day = t.day;
insert into cost_rollups_daily (company_id, day, agent_id, project_id, provider, biller, model, billing_type, source,
                                cost_cents, input_tokens, cached_input_tokens, output_tokens, event_count)
select e.company_id, date_trunc('day', e.occurred_at, 'UTC'), e.agent_id, e.project_id, e.provider, e.biller, e.model, e.billing_type, e.source,
       sum(e.cost_cents), coalesce(sum(e.input_tokens), 0), coalesce(sum(e.cached_input_tokens), 0), coalesce(sum(e.output_tokens), 0), count(*)
  from cost_events e
 where (e.company_id, date_trunc('day', e.occurred_at, 'UTC')) in (select company_id, date_trunc('day', occurred_at, 'UTC') from cost_events where source = 'adapter')
 group by 1, 2, 3, 4, 5, 6, 7, 8, 9;
