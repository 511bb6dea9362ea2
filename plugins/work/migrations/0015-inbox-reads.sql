-- The board user's inbox: which of its items each user has read, per company. An item is
-- named by kind and id ('approval:<uuid>', 'run:<uuid>', ...); nothing else is kept, so a
-- mark outlives its item harmlessly (and the item, should it come back, stays read).
create table inbox_reads (
  company_id uuid not null,
  user_id text not null,
  item_id text not null,
  read_at timestamptz not null default now(),
  primary key (company_id, user_id, item_id)
);
-- Comments that mention someone, newest first per company (the inbox's mention search).
create index issue_comments_company_created on issue_comments (company_id, created_at desc) where deleted_at is null;
