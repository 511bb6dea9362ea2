-- Approvals are decided by the board: approved, rejected, or sent back for revision, which
-- leaves them open (decidable again) like pending. Lists read a company's approvals newest
-- first, and the hire flow finds an agent's open hire approvals by their subject.
alter table approvals drop constraint approvals_status_check;
alter table approvals add constraint approvals_status_check
  check (status in ('pending', 'revision_requested', 'approved', 'rejected', 'cancelled'));
create index approvals_company_created_idx on approvals (company_id, created_at desc, id desc);
create index approvals_subject_agent_idx on approvals (subject_agent_id) where subject_agent_id is not null;

-- An open hire approval always has its agent waiting in pending_approval. Terminating a pending
-- agent by PATCH used to leave its approval open; those are closed here as termination closes
-- them now.
update approvals a
   set status = 'cancelled', decided_at = now(), updated_at = now(), decision_note = 'Agent terminated before approval'
  from agents g
 where g.id = a.subject_agent_id and a.type = 'hire_agent' and a.status = 'pending' and g.status <> 'pending_approval';
