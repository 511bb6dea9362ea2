-- Jobs a plugin call enqueues (ctx.jobs.enqueue) are staged in the call's own transaction, so a
-- job exists exactly when the writes of the call that enqueued it commit: a crash after the
-- commit loses nothing, a rollback queues nothing. The kernel checks the job first (declared,
-- payload schema, limits) and signs it as a ticket bound to the invocation; the database checks
-- the ticket again here. The kernel then moves committed rows into the job engine (pg-boss),
-- at once for the call that answered and by a sweep for anything left (a process that died in
-- between), each row once (SKIP LOCKED; the engine's insert is idempotent by job id).
create table keel_host.staged_jobs (
  id uuid primary key,
  plugin text not null,
  invocation_id text not null,
  company_id uuid,
  job jsonb not null,
  staged_at timestamptz not null default now()
);
create index staged_jobs_invocation on keel_host.staged_jobs (invocation_id);
revoke all on keel_host.staged_jobs from public;

create function keel_bridge.stage_job(invocation text, signature text, ticket text, ticket_signature text)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
  k bytea;
  job jsonb;
begin
  select b.key into k from keel_private.bridge_key b;
  -- The 'job:' prefix keeps a job ticket's signature apart from an invocation's.
  if encode(sha256(k || sha256(k || convert_to('job:' || ticket, 'UTF8'))), 'hex') <> ticket_signature then
    raise exception 'invalid job ticket' using errcode = 'insufficient_privilege';
  end if;
  job := ticket::jsonb;
  if job ->> 'invocationId' is distinct from claims ->> 'invocationId' or job ->> 'plugin' is distinct from claims ->> 'plugin' then
    raise exception 'job ticket issued to another call' using errcode = 'insufficient_privilege';
  end if;
  insert into keel_host.staged_jobs (id, plugin, invocation_id, company_id, job)
  values ((job ->> 'id')::uuid, claims ->> 'plugin', claims ->> 'invocationId', (claims ->> 'companyId')::uuid, job);
end $$;
revoke all on function keel_bridge.stage_job(text, text, text, text) from public;

-- ctx.jobs.cancel of a job the same call staged (not committed yet, so only its transaction sees it).
create function keel_bridge.unstage_job(invocation text, signature text, job_id uuid)
  returns boolean language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
begin
  delete from keel_host.staged_jobs s where s.id = job_id and s.invocation_id = claims ->> 'invocationId';
  return found;
end $$;
revoke all on function keel_bridge.unstage_job(text, text, uuid) from public;
