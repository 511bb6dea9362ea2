import type { Database } from '../../db/database.ts';

/**
 * Tables the contribution points keep for themselves, in a schema of their own that no plugin
 * role can use (a new schema grants nothing to PUBLIC, and the schema revokes it anyway).
 * Created at start-up like the job engine's schema, idempotently and under an advisory lock
 * so that kernels starting together on one database do not race.
 *
 * webhook_deliveries: signatures of verified webhook deliveries, kept until the delivery
 * could no longer be accepted (its timestamp turns stale), so a replay is refused by every
 * kernel process that shares the database.
 */
const DDL = `
create schema if not exists keel_host;
revoke all on schema keel_host from public;
create table if not exists keel_host.webhook_deliveries (
  plugin_key text not null references public.plugins (key) on delete cascade,
  endpoint_key text not null,
  signature_hash text not null,
  received_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (plugin_key, endpoint_key, signature_hash)
);
create index if not exists webhook_deliveries_expiry on keel_host.webhook_deliveries (expires_at);
`;

const LOCK_KEY = 727_010;

export async function ensureHostTables(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(?)', [LOCK_KEY]);
    for (const statement of DDL.split(';').map((s) => s.trim()).filter(Boolean)) await tx.exec(statement);
  });
}
