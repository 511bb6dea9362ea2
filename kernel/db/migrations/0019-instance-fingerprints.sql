-- Fingerprints of secrets every Keel process sharing this database must hold alike (the agent
-- token secret): a process started with another one refuses to start, instead of refusing the
-- agent tokens its peers mint. A fingerprint is an HMAC derived from the secret, never the secret.
create table keel_private.instance_fingerprints (
  name text primary key,
  fingerprint text not null,
  recorded_at timestamptz not null default now()
);
revoke all on keel_private.instance_fingerprints from public;
