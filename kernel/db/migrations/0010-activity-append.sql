-- Appending to an activity chain looks the chain head up first and creates it only when it is
-- missing: the speculative insert that used to precede every append cost an index probe and a
-- conflict check per entry, and a batch appends many entries to one chain.
create or replace function keel_activity_append() returns trigger language plpgsql as $$
declare
  head activity_chain_heads%rowtype;
  key text := coalesce(new.company_id::text, 'instance');
begin
  -- The row lock serialises appends per chain, so seq and prev_hash never fork.
  select * into head from activity_chain_heads where chain_key = key for update;
  if not found then
    insert into activity_chain_heads (chain_key, last_seq, last_hash)
      values (key, 0, repeat('0', 64)) on conflict (chain_key) do nothing;
    select * into head from activity_chain_heads where chain_key = key for update;
  end if;
  new.seq := head.last_seq + 1;
  new.prev_hash := head.last_hash;
  new.created_at := clock_timestamp();
  new.hash := keel_activity_hash(new.prev_hash, new.seq, new.company_id, new.actor_type, new.actor_id, new.action,
    new.entity_type, new.entity_id, new.agent_id, new.run_id, new.details, new.created_at);
  update activity_chain_heads set last_seq = new.seq, last_hash = new.hash where chain_key = key;
  return new;
end $$;
