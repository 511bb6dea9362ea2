-- Kernel processes cache credentials, agents, users, runs and companies in memory. Every change
-- to those rows, from any code path in any process, announces itself on the keel_auth channel so
-- that each process evicts its copy; notifications are delivered only when the change commits.

create function keel_notify_invalidation() returns trigger language plpgsql as $$
declare
  row_id text;
begin
  if tg_argv[1] is not null then
    row_id := case when tg_op = 'DELETE' then to_jsonb(old) ->> tg_argv[1] else to_jsonb(new) ->> tg_argv[1] end;
  else
    row_id := case when tg_op = 'DELETE' then old.id::text else new.id::text end;
  end if;
  perform pg_notify('keel_auth', json_build_object('type', tg_argv[0], 'id', row_id)::text);
  return null;
end $$;

create trigger companies_invalidate after update or delete on companies
  for each row execute function keel_notify_invalidation('company');

create trigger agents_invalidate after update on agents
  for each row when (old.status is distinct from new.status or old.role is distinct from new.role
    or old.company_id is distinct from new.company_id or old.adapter_type is distinct from new.adapter_type)
  execute function keel_notify_invalidation('agent');
create trigger agents_invalidate_delete after delete on agents
  for each row execute function keel_notify_invalidation('agent');

create trigger agent_api_keys_invalidate after update on agent_api_keys
  for each row when (old.revoked_at is distinct from new.revoked_at or old.key_hash is distinct from new.key_hash)
  execute function keel_notify_invalidation('credential_id');
create trigger agent_api_keys_invalidate_delete after delete on agent_api_keys
  for each row execute function keel_notify_invalidation('credential_id');

create trigger board_api_keys_invalidate after update on board_api_keys
  for each row when (old.revoked_at is distinct from new.revoked_at or old.key_hash is distinct from new.key_hash)
  execute function keel_notify_invalidation('credential_id');
create trigger board_api_keys_invalidate_delete after delete on board_api_keys
  for each row execute function keel_notify_invalidation('credential_id');

create trigger user_sessions_invalidate after update or delete on user_sessions
  for each row execute function keel_notify_invalidation('credential_id');

create trigger users_invalidate after update or delete on users
  for each row execute function keel_notify_invalidation('user');

create trigger company_memberships_invalidate after insert or update or delete on company_memberships
  for each row execute function keel_notify_invalidation('user', 'principal_id');

create trigger runs_invalidate after update or delete on runs
  for each row execute function keel_notify_invalidation('run');
