-- A run a plugin opens (ctx.runs.open) commits in the kernel's transaction, before the plugin's
-- own transaction has decided. The plugin's worker confirms the runs its call opened inside
-- that transaction just before COMMIT (keel_bridge.confirm_opened_runs), so a run is confirmed
-- exactly when the call's writes commit. `confirm_by` is the moment after which an unconfirmed
-- run is known to be orphaned (its call's signed identity has expired, so it can no longer
-- confirm): the sweep of any Keel process then closes it failed `opening_call_failed`. A Keel
-- process that died between the two commits leaves exactly such a run. Null: confirmed, or
-- opened by the kernel itself.
alter table runs add column opened_by_call uuid;
alter table runs add column confirm_by timestamptz;
create index runs_unconfirmed_idx on runs (confirm_by) where confirm_by is not null;

create function keel_bridge.confirm_opened_runs(invocation text, signature text)
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
