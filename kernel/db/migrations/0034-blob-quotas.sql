-- Blob quotas: how many blobs and bytes each company holds, in total (owner '*') and per owner
-- ('kernel' or a plugin key). The kernel checks a new blob against the configured quotas
-- (limits.blobQuota) by adding it to these rows in the blob's own transaction: the upsert locks
-- the rows, so writers in several Keel processes are serialised on them and cannot jointly pass
-- a quota. Deletes give the room back through the trigger below, whoever deletes (an owner, a
-- company delete cascading to its blobs). No foreign key to companies: the cascade that removes
-- a company's blobs updates these rows, which it must not be removing at the same time; they
-- are deleted by the trigger once a company holds nothing.
create table blob_usage (
  company_id uuid not null,
  owner text not null,
  blob_count bigint not null default 0 check (blob_count >= 0),
  byte_count bigint not null default 0 check (byte_count >= 0),
  primary key (company_id, owner)
);

insert into blob_usage (company_id, owner, blob_count, byte_count)
  select company_id, owner, count(*), coalesce(sum(byte_size), 0) from blobs group by company_id, owner;
insert into blob_usage (company_id, owner, blob_count, byte_count)
  select company_id, '*', count(*), coalesce(sum(byte_size), 0) from blobs group by company_id;

-- The company's row first, then the owner's: the order every writer takes them in.
create function blob_usage_release() returns trigger language plpgsql as $$
begin
  update blob_usage set blob_count = blob_count - 1, byte_count = byte_count - old.byte_size
    where company_id = old.company_id and owner = '*';
  update blob_usage set blob_count = blob_count - 1, byte_count = byte_count - old.byte_size
    where company_id = old.company_id and owner = old.owner;
  delete from blob_usage where company_id = old.company_id and owner in ('*', old.owner) and blob_count = 0;
  return null;
end $$;

create trigger blobs_release_usage after delete on blobs for each row execute function blob_usage_release();

-- Whether the first bytes of a blob sniff as content a browser would run (HTML, SVG, XML,
-- script, PDF with script): such a blob is never served inline. Null for blobs stored before
-- the column existed; the serving path sniffs those itself.
alter table blobs add column active_content boolean;

-- Names stored before names were cleaned lose their control, bidi and invisible characters
-- (the list of sdk/shared/invisible-characters.ts, for names); a name left empty becomes null.
update blobs set filename = nullif(btrim(regexp_replace(filename,
    '[\x01-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f\U000e0100-\U000e01ef]', '', 'g')), '')
  where filename ~ '[\x01-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f\U000e0100-\U000e01ef]';
