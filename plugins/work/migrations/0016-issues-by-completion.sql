-- The issues completed in a range of days (GET .../issues/daily).
create index issues_company_completed on issues (company_id, completed_at) where completed_at is not null and hidden_at is null;
