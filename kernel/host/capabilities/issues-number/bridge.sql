-- The keel_bridge function(s) of capability issues.number, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

-- issues.number: the next number of the company's issue counter, taken in the calling plugin's
-- own transaction. The update holds the company row's lock until that transaction ends, so
-- concurrent creates of one company take consecutive numbers one after another, none twice,
-- and a create that rolls back gives its number back (no gap). The identifier is the company's
-- issue prefix, a dash and the number.
create or replace function keel_bridge.next_issue_number(invocation text, signature text)
  returns jsonb language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(keel_private.verified_invocation(invocation, signature));
  taken integer;
  prefix text;
begin
  update companies set issue_counter = issue_counter + 1 where id = company
  returning issue_counter, issue_prefix into taken, prefix;
  if taken is null then
    raise exception 'company % not found', company using errcode = 'no_data_found';
  end if;
  return jsonb_build_object('number', taken, 'prefix', prefix, 'identifier', prefix || '-' || taken);
end $$;
revoke all on function keel_bridge.next_issue_number(text, text) from public;

-- issues.number, in bulk: `wanted` consecutive numbers of the company's issue counter, taken
-- in one update in the calling plugin's own transaction (as next_issue_number takes one), so an
-- import of ten thousand issues locks the company row once instead of ten thousand times. The
-- range is given back on rollback like a single number. At most 10,000 per call.
create or replace function keel_bridge.next_issue_numbers(invocation text, signature text, wanted integer)
  returns jsonb language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(keel_private.verified_invocation(invocation, signature));
  taken integer;
  prefix text;
begin
  if wanted is null or wanted < 1 or wanted > 10000 then
    raise exception 'between 1 and 10000 issue numbers may be taken at once, not %', wanted using errcode = 'invalid_parameter_value';
  end if;
  update companies set issue_counter = issue_counter + wanted where id = company
  returning issue_counter, issue_prefix into taken, prefix;
  if taken is null then
    raise exception 'company % not found', company using errcode = 'no_data_found';
  end if;
  return jsonb_build_object('first', taken - wanted + 1, 'last', taken, 'prefix', prefix);
end $$;
revoke all on function keel_bridge.next_issue_numbers(text, text, integer) from public;
