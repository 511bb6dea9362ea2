-- issues.number: the next number of the company's issue counter, taken in the calling plugin's
-- own transaction. The update holds the company row's lock until that transaction ends, so
-- concurrent creates of one company take consecutive numbers one after another, none twice,
-- and a create that rolls back gives its number back (no gap). The identifier is the company's
-- issue prefix, a dash and the number.
create function keel_bridge.next_issue_number(invocation text, signature text)
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
