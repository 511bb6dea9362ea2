-- The keel_bridge function(s) of capability companies.pause, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

create or replace function keel_bridge.hold_company(invocation text, signature text, held boolean, reason text)
  returns jsonb language sql security definer set search_path = public, pg_temp as $$
  select keel_private.plugin_hold(claims, 'company', keel_private.company_of(claims), held, reason)
    from keel_private.verified_invocation(invocation, signature) as v(claims)
$$;
revoke all on function keel_bridge.hold_company(text, text, boolean, text) from public;
