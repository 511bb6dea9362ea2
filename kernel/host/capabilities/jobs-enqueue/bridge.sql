-- The keel_bridge function(s) of capability jobs.enqueue, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

create or replace function keel_bridge.stage_job(invocation text, signature text, ticket text, ticket_signature text)
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
create or replace function keel_bridge.unstage_job(invocation text, signature text, job_id uuid)
  returns boolean language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
begin
  delete from keel_host.staged_jobs s where s.id = job_id and s.invocation_id = claims ->> 'invocationId';
  return found;
end $$;
revoke all on function keel_bridge.unstage_job(text, text, uuid) from public;
