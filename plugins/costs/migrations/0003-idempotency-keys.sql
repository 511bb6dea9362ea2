-- Creates a client may retry (finance events): the key is unique per company and kind, and is
-- written with the row it created, in the same transaction (createOnce of @keel/sdk/plugin).
create table idempotency_keys (
  company_id uuid not null,
  kind text not null,
  key text not null,
  entity_id uuid not null,
  fingerprint text not null,
  created_at timestamptz not null default now(),
  primary key (company_id, kind, key)
);
