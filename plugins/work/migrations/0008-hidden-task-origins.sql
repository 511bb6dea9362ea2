-- Hidden tasks other plugins make (create-hidden-task service) are found again by their origin:
-- one task per origin and company, so a caller's retry gets the task its first call made.
create unique index issues_task_origin on issues (company_id, origin_kind, origin_id) where origin_kind like '%:%';
