-- The blob store: bytes of a company (logos today; attachments, skill files, run logs and
-- backups next) kept in PostgreSQL. Several Keel processes share one database and nothing
-- else, so a process-local folder would serve a file from one process only; in the database a
-- blob commits or rolls back with the rows that reference it, a company delete removes its
-- blobs with everything else, and there is no second server to run, back up or secure.
-- Bytes are kept in chunks of at most 256 KiB, so that neither an upload nor a download holds
-- a whole blob in memory.
create table blobs (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null references companies (id) on delete cascade,
  -- 'kernel' or the key of the plugin that owns the blob.
  owner text not null,
  content_type text not null,
  byte_size bigint not null check (byte_size >= 0),
  sha256 text not null,
  filename text,
  created_at timestamptz not null default now()
);
create index blobs_company_owner_idx on blobs (company_id, owner);

create table blob_chunks (
  blob_id uuid not null references blobs (id) on delete cascade,
  seq integer not null check (seq >= 0),
  data bytea not null,
  primary key (blob_id, seq)
);
-- Uploads are mostly compressed media already: no TOAST compression attempt per chunk.
alter table blob_chunks alter column data set storage external;

-- A plugin other than the owner may reach a blob only when it was handed it explicitly.
create table blob_links (
  blob_id uuid not null references blobs (id) on delete cascade,
  plugin_key text not null,
  linked_by text not null,
  created_at timestamptz not null default now(),
  primary key (blob_id, plugin_key)
);

-- The kernel's logo assets move onto the store: an asset keeps its kernel metadata (kind,
-- creator) and names its blob; the bytes live in blob_chunks. Existing assets keep their id,
-- which also becomes their blob's id.
alter table assets add column blob_id uuid references blobs (id) on delete cascade;
insert into blobs (id, company_id, owner, content_type, byte_size, sha256, filename, created_at)
  select id, company_id, 'kernel', content_type, byte_size, sha256, original_filename, created_at from assets;
insert into blob_chunks (blob_id, seq, data)
  select a.id, s.seq, substring(a.data from s.seq * 262144 + 1 for 262144)
  from assets a cross join lateral generate_series(0, ceil(length(a.data)::numeric / 262144)::int - 1) as s(seq);
update assets set blob_id = id;
alter table assets alter column blob_id set not null;
alter table assets drop column data;
create index assets_blob_idx on assets (blob_id);

-- A company's own upload limit, set by an instance admin; without a row the instance's
-- limits.attachmentBytes applies. A route's own maxBytes caps either.
create table company_upload_limits (
  company_id uuid primary key references companies (id) on delete cascade,
  max_bytes bigint not null check (max_bytes > 0),
  updated_at timestamptz not null default now()
);
