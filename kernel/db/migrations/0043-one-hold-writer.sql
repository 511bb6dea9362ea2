-- One writer for pauses (issue 31, point 4). Holds were written in two places: plugins, the
-- managed-agent switch and the archive cascade through keel_private.change_hold; the board's
-- pauses and resumes by the kernel's own statements on scope_holds. Every hold is now placed and
-- lifted by keel_private.change_hold, whoever decides it. The board's decisions are the
-- operator's: its pause is a hold of holder 'operator' (as before), and its lift (a resume, or a
-- status it sets over a pause: terminated, archived, active) is, as migration 0020 says, its
-- decision over every hold: all of them go, whoever placed them, and the answer names them
-- (`lifted`, oldest first) for the board's activity entry. The signature, SECURITY DEFINER, the
-- search_path and the grants (none: keel_private is the kernel's) are unchanged, so
-- keel_private.plugin_hold and the bridge functions that call it are untouched; a plugin's
-- holder is always 'plugin:<key>', never 'operator', so no plugin reaches the lift of every hold.
-- The scope's row is locked FOR NO KEY UPDATE (was FOR UPDATE), as the company routes lock it
-- and as PostgreSQL's own update of its other columns does: holds still serialise with every
-- status writer, and an insert referencing the row (a run, an activity entry) is not made to
-- wait for a pause; the board's company pause, now through here, takes no stronger lock than
-- its route already holds.
create or replace function keel_private.change_hold(company uuid, scope_kind text, target uuid, holder_name text, why text, held boolean)
  returns jsonb language plpgsql security definer set search_path = public, pg_temp as $$
declare
  current_status text;
  remaining text;
  lifted jsonb := '[]'::jsonb;
  resumed_status text := case when scope_kind = 'agent' then 'idle' else 'active' end;
begin
  if scope_kind = 'agent' then
    select status into current_status from agents where id = target and company_id = company for no key update;
  elsif scope_kind = 'company' then
    select status into current_status from companies where id = company and id = target for no key update;
  end if;
  if current_status is null then
    return jsonb_build_object('found', false);
  end if;

  if held then
    if current_status in ('terminated', 'pending_approval', 'archived') then
      return jsonb_build_object('found', true, 'change', null);
    end if;
    insert into scope_holds (company_id, scope, scope_id, holder, reason)
    values (company, scope_kind, target, holder_name, why) on conflict do nothing;
    if current_status = 'paused' then
      return jsonb_build_object('found', true, 'change', null);
    end if;
    if scope_kind = 'agent' then
      update agents set status = 'paused', pause_reason = why, paused_at = now(), updated_at = now() where id = target;
    else
      update companies set status = 'paused', pause_reason = why, paused_at = now(), updated_at = now() where id = target;
    end if;
    return jsonb_build_object('found', true, 'change', jsonb_build_object('from', current_status, 'to', 'paused'));
  end if;

  if holder_name = 'operator' then
    -- The board's lift: every hold of the scope goes.
    with removed as (
      delete from scope_holds where scope = scope_kind and scope_id = target returning holder, reason, created_at
    )
    select coalesce(jsonb_agg(jsonb_build_object('holder', holder, 'reason', reason) order by created_at, holder, reason), '[]'::jsonb)
      into lifted from removed;
    if current_status <> 'paused' then
      return jsonb_build_object('found', true, 'change', null, 'lifted', lifted);
    end if;
  else
    delete from scope_holds where scope = scope_kind and scope_id = target and holder = holder_name and reason = why;
    if not found or current_status <> 'paused' then
      return jsonb_build_object('found', true, 'change', null);
    end if;
    select reason into remaining from scope_holds where scope = scope_kind and scope_id = target order by created_at, reason limit 1;
    if remaining is not null then
      -- Still held by someone else: paused, for the oldest reason left.
      if scope_kind = 'agent' then
        update agents set pause_reason = remaining where id = target;
      else
        update companies set pause_reason = remaining where id = target;
      end if;
      return jsonb_build_object('found', true, 'change', null);
    end if;
  end if;
  if scope_kind = 'agent' then
    update agents set status = resumed_status, pause_reason = null, paused_at = null, updated_at = now() where id = target;
  else
    update companies set status = resumed_status, pause_reason = null, paused_at = null, updated_at = now() where id = target;
  end if;
  if holder_name = 'operator' then
    return jsonb_build_object('found', true, 'change', jsonb_build_object('from', 'paused', 'to', resumed_status), 'lifted', lifted);
  end if;
  return jsonb_build_object('found', true, 'change', jsonb_build_object('from', 'paused', 'to', resumed_status));
end $$;
revoke all on function keel_private.change_hold(uuid, text, uuid, text, text, boolean) from public;
