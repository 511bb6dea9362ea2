-- Schema changes of the companies work.

-- A company's logo points at one of its assets; removing the asset clears the logo instead
-- of leaving a dangling id. (Same-company ownership is checked by the API: a foreign key
-- cannot express it.)
do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'companies_logo_asset_id_fkey') then
    alter table companies add constraint companies_logo_asset_id_fkey
      foreign key (logo_asset_id) references assets (id) on delete set null;
  end if;
end $$;

-- Listing and uniqueness checks read prefixes by their leading letters.
create index if not exists companies_issue_prefix_pattern_idx on companies (issue_prefix text_pattern_ops);
