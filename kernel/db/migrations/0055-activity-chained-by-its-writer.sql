-- The activity log's one writer chains what it appends. Each entry used to be chained by a row
-- trigger that locked, read and rewrote its chain's head: a group commit of thirty cost events
-- rewrote its company's head thirty times, inside the stretch where every writer of that
-- company waits for the head. keel_private.append_activities now locks each chain's head once
-- per statement (in key order, where the trigger locked them in the order of the entries, so
-- two statements appending to two companies in opposite orders could deadlock), gives the
-- entries their seq, prev_hash and hash in the order given, inserts them together and writes
-- each head once. Entries, hashes and order are what the trigger made of them, so
-- `npm run activity:verify` checks chains written either way alike.
create or replace function keel_private.append_activities(entries jsonb)
  returns setof activity_log language plpgsql security definer set search_path = public, pg_temp as $$
declare
  -- The chains this statement appends to, in key order, with their running heads.
  chains text[];
  seqs bigint[] := '{}';
  hashes text[] := '{}';
  head_seq bigint;
  head_hash text;
  i int;
  entry jsonb;
  appended_row activity_log;
  appended activity_log[] := '{}';
begin
  select coalesce(array_agg(distinct coalesce((x.e ->> 'companyId')::uuid::text, 'instance') order by coalesce((x.e ->> 'companyId')::uuid::text, 'instance')), '{}')
    into chains from jsonb_array_elements(entries) as x(e);
  -- Each head is locked until commit, so seq and prev_hash never fork; in key order, so two
  -- statements appending to the same chains never wait on each other in a circle.
  for i in 1 .. cardinality(chains) loop
    select h.last_seq, h.last_hash into head_seq, head_hash from activity_chain_heads h where h.chain_key = chains[i] for update;
    if not found then
      insert into activity_chain_heads (chain_key, last_seq, last_hash) values (chains[i], 0, repeat('0', 64)) on conflict (chain_key) do nothing;
      select h.last_seq, h.last_hash into head_seq, head_hash from activity_chain_heads h where h.chain_key = chains[i] for update;
    end if;
    seqs := seqs || head_seq;
    hashes := hashes || head_hash;
  end loop;
  for entry in select x.e from jsonb_array_elements(entries) with ordinality as x(e, ord) order by x.ord loop
    appended_row := null;
    appended_row.id := gen_random_uuid();
    appended_row.company_id := (entry ->> 'companyId')::uuid;
    appended_row.actor_type := entry ->> 'actorType';
    appended_row.actor_id := entry ->> 'actorId';
    appended_row.action := entry ->> 'action';
    appended_row.entity_type := entry ->> 'entityType';
    appended_row.entity_id := entry ->> 'entityId';
    appended_row.agent_id := (entry ->> 'agentId')::uuid;
    appended_row.run_id := (entry ->> 'runId')::uuid;
    appended_row.details := nullif(entry -> 'details', 'null'::jsonb);
    i := array_position(chains, coalesce(appended_row.company_id::text, 'instance'));
    appended_row.seq := seqs[i] + 1;
    appended_row.prev_hash := hashes[i];
    appended_row.created_at := clock_timestamp();
    appended_row.hash := keel_activity_hash(appended_row.prev_hash, appended_row.seq, appended_row.company_id, appended_row.actor_type,
      appended_row.actor_id, appended_row.action, appended_row.entity_type, appended_row.entity_id, appended_row.agent_id, appended_row.run_id,
      appended_row.details, appended_row.created_at);
    seqs[i] := appended_row.seq;
    hashes[i] := appended_row.hash;
    appended := appended || appended_row;
  end loop;
  for i in 1 .. cardinality(chains) loop
    update activity_chain_heads set last_seq = seqs[i], last_hash = hashes[i] where chain_key = chains[i];
  end loop;
  perform set_config('keel.activity_append', 'on', true);
  return query insert into activity_log select * from unnest(appended) returning *;
  perform set_config('keel.activity_append', '', true);
end $$;
revoke all on function keel_private.append_activities(jsonb) from public;

-- The trigger no longer chains, row by row: once per statement, it refuses an insert that the
-- writer above did not make, so that nothing appends an entry the chain does not account for.
-- No role but the kernel's may insert into activity_log at all; this holds the kernel's own
-- code to the one writer (a restore runs with triggers off: backup/restore-snapshot.ts).
drop trigger activity_log_append on activity_log;
drop function keel_activity_append();
create function keel_activity_append_guard() returns trigger language plpgsql as $$
begin
  if current_setting('keel.activity_append', true) is distinct from 'on' then
    raise exception 'activity_log is appended to only through keel_private.append_activities' using errcode = 'insufficient_privilege';
  end if;
  return null;
end $$;
create trigger activity_log_append before insert on activity_log
  for each statement execute function keel_activity_append_guard();
