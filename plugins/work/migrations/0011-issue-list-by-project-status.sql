-- The issue list filtered by project and one status, in page order (created_at desc, id desc):
-- without it the project's index is read until 51 issues of the status turn up, every issue of
-- the project when none has it.
create index issues_project_status_list on issues (project_id, status, created_at desc, id desc) where project_id is not null and hidden_at is null;
