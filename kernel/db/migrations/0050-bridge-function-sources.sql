-- The keel_bridge functions a capability serves live in its folder (kernel/host/capabilities/
-- <capability>/bridge.sql), one current definition each, and the migration runner installs
-- them after the migrations, under the same advisory lock (kernel/db/bridge-functions.ts).
-- This table records which text of each file is installed and what the database then held
-- (md5 of its functions' definitions), so that a file is run again only when it changed or its
-- functions were changed by anything else (a migration), and concurrent kernels starting at
-- once install it once.
create table kernel_bridge_sources (
  source text primary key,
  sha256 text not null,
  definitions_md5 text not null,
  installed_at timestamptz not null default now()
);
revoke all on kernel_bridge_sources from public;
