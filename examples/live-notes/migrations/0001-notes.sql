create table notes (
  id bigserial primary key,
  company_id uuid not null,
  text text not null,
  created_at timestamptz not null default now()
);
create index notes_company on notes (company_id, id);
