-- Feedback traces: a board user's vote (up or down) on one piece of agent output, an issue
-- comment written by an agent or a document revision written by one. One vote per user and
-- target: voting again replaces it, withdrawing deletes it. The payload is a snapshot of the
-- target taken at the first vote (its text, author agent, run, issue and project), so that the
-- trace keeps what was judged whatever later happens to the issue or the target.
--
-- status: 'local' when the voter did not allow sharing, 'pending' when they did. Nothing ever
-- moves a trace further: the instance has no destination to send traces to.
create table feedback_traces (
  id uuid primary key default gen_random_uuid(),
  company_id uuid not null,
  issue_id uuid not null references issues (id) on delete cascade,
  issue_identifier text not null,
  project_id uuid,
  target_type text not null check (target_type in ('comment', 'document_revision')),
  target_id uuid not null,
  author_agent_id uuid not null,
  run_id uuid,
  voter_user_id text not null,
  vote text not null check (vote in ('up', 'down')),
  reason text check (length(reason) <= 2000),
  shareable boolean not null default false,
  status text not null check (status in ('local', 'pending')),
  payload jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (target_type, target_id, voter_user_id)
);
-- The company's list (newest first, and its cursor), whole and by issue.
create index feedback_traces_company on feedback_traces (company_id, created_at desc, id desc);
create index feedback_traces_issue on feedback_traces (issue_id, created_at desc, id desc);
