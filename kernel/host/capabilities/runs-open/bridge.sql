-- The keel_bridge function(s) of capability runs.open, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

create or replace function keel_bridge.confirm_opened_runs(invocation text, signature text)
  returns integer language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
  confirmed integer;
begin
  update runs set confirm_by = null
   where opened_by_call = (claims ->> 'invocationId')::uuid and opened_by_plugin = claims ->> 'plugin' and confirm_by is not null;
  get diagnostics confirmed = row_count;
  return confirmed;
end $$;
revoke all on function keel_bridge.confirm_opened_runs(text, text) from public;
