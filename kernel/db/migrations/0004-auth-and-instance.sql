-- Command-line auth challenges deliver their board API key without the server ever storing
-- it. At creation the key is derived as HMAC(challenge secret, id ":" key_nonce); only its
-- hash and display prefix are kept, and the nonce is erased once the key has been handed
-- over (or the challenge cancelled), so that from then on not even the holder of the
-- challenge secret can derive the key again. See docs/api/auth.md.
alter table cli_auth_challenges add column if not exists key_nonce text;
alter table cli_auth_challenges add column if not exists pending_key_hash text;
alter table cli_auth_challenges add column if not exists pending_key_prefix text;
create index if not exists cli_auth_challenges_expires_idx on cli_auth_challenges (expires_at);
