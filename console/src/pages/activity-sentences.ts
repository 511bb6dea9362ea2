/**
 * What each activity action says, as the rest of a sentence after the actor's name: `{entity}`
 * stands for the entity's name (linked), `{amount}` for `details.costCents` in dollars. One table;
 * an action not in it falls back to a readable form of its name (`deploy.finished`:
 * "recorded “deploy finished” on {entity}"), so a new action still reads as a sentence.
 */
const SENTENCES: Record<string, string> = {
  'agent.created': 'created the agent {entity}',
  'agent.updated': 'changed the agent {entity}',
  'agent.deleted': 'deleted the agent {entity}',
  'agent.paused': 'paused {entity}',
  'agent.resumed': 'resumed {entity}',
  'agent.terminated': 'terminated {entity}',
  'agent.approved': 'approved {entity}',
  'agent.key_created': 'created an API key for {entity}',
  'agent.key_revoked': 'revoked an API key of {entity}',
  'agent.permissions_updated': 'changed the permissions of {entity}',
  'agent.runtime_session_reset': 'reset the session of {entity}',
  'agent.skills_synced': 'synced the skills of {entity}',
  'agent.instructions_updated': 'changed the instructions of {entity}',
  'agent.instructions_bundle_updated': 'changed the instructions of {entity}',
  'agent.instructions_path_updated': 'changed the instructions file of {entity}',
  'agent.instructions_file_written': 'wrote an instructions file of {entity}',
  'agent.instructions_file_deleted': 'deleted an instructions file of {entity}',
  'agent.wakeup_queued': 'woke {entity}',
  'agent.wakeup_coalesced': 'woke {entity} (joined its active run)',
  'agent.wakeup_skipped': 'woke {entity} (already working on it)',
  'approval.created': 'asked for {entity}',
  'approval.approved': 'approved {entity}',
  'approval.rejected': 'rejected {entity}',
  'approval.revision_requested': 'sent back {entity} for revision',
  'issue.created': 'created {entity}',
  'issue.updated': 'updated {entity}',
  'issue.comment_added': 'commented on {entity}',
  'issue.checked_out': 'checked out {entity}',
  'issue.checkout_released': 'released {entity}',
  'issue.released': 'released {entity}',
  'issue.unassigned': 'unassigned {entity}',
  'issue.attachment_added': 'attached a file to {entity}',
  'issue.attachment_removed': 'removed a file from {entity}',
  'issue.work_product_created': 'added a work product to {entity}',
  'issue.work_product_updated': 'updated a work product of {entity}',
  'project.created': 'created the project {entity}',
  'project.updated': 'changed the project {entity}',
  'project.paused': 'paused the project {entity}',
  'project.resumed': 'resumed the project {entity}',
  'goal.created': 'set the goal {entity}',
  'goal.updated': 'changed the goal {entity}',
  'company.created': 'created the company {entity}',
  'company.updated': 'changed the company {entity}',
  'company.archived': 'archived the company {entity}',
  'company.imported': 'imported into {entity}',
  'company.exported': 'exported {entity}',
  'cost_event.created': 'recorded {amount} of spend',
  'finance_event.created': 'recorded a finance event of {amount}',
  'budget.updated': 'changed the budget of {entity}',
  'budget.incident_opened': 'opened a budget incident',
  'budget.incident_resolved': 'resolved a budget incident',
  'run.opened': 'opened {entity}',
  'run.started': 'started {entity}',
  'run.finished': 'finished {entity}',
  'run.closed': 'closed {entity}',
  'run.cancelled': 'cancelled {entity}',
  'execution.started': 'started a process',
  'execution.finished': 'saw a process finish',
  'execution.cancel_requested': 'asked a process to stop',
  'secret.created': 'created the secret {entity}',
  'secret.updated': 'changed the secret {entity}',
  'secret.rotated': 'rotated the secret {entity}',
  'secret.deleted': 'deleted the secret {entity}',
  'secret.value_read': 'read the secret {entity}',
  'secret.granted': 'granted the secret {entity}',
  'secret.grant_revoked': 'revoked a grant of the secret {entity}',
  'model_provider.created': 'added the model provider {entity}',
  'model_provider.updated': 'changed the model provider {entity}',
  'model_provider.deleted': 'removed the model provider {entity}',
  'permission_grant.upserted': 'granted a permission',
  'permission_grant.deleted': 'removed a permission',
  'feedback.voted': 'voted on {entity}',
  'feedback.vote_changed': 'changed a vote on {entity}',
  'feedback.vote_withdrawn': 'withdrew a vote on {entity}',
  'routine.created': 'created the routine {entity}',
  'routine.paused': 'paused the routine {entity}',
  'routine.resumed': 'resumed the routine {entity}',
  'user.signed_in': 'signed in',
  'user.signed_out': 'signed out',
  'user.signed_up': 'signed up',
  'resource_membership.joined': 'joined {entity}',
  'resource_membership.left': 'left {entity}',
};

/** "deploy.finished" → "recorded “deploy finished” on {entity}". */
function readable(action: string): string {
  return `recorded “${action.replace(/[._-]+/g, ' ').trim()}” on {entity}`;
}

/** The sentence's template for an action (after the actor's name). */
export function sentenceFor(action: string): string {
  return SENTENCES[action] ?? readable(action);
}

/** The kinds of entity the feed filters by (`entityType`), with their names. */
export const ENTITY_KINDS: ReadonlyArray<readonly [string, string]> = [
  ['issue', 'Issues'], ['agent', 'Agents'], ['project', 'Projects'], ['goal', 'Goals'], ['run', 'Runs'], ['heartbeat_run', 'Runs (ledger)'],
  ['approval', 'Approvals'], ['company', 'The company'], ['cost_event', 'Spend'], ['budget_policy', 'Budgets'], ['budget_incident', 'Budget incidents'],
  ['secret', 'Secrets'], ['model_provider', 'Model providers'], ['execution', 'Processes'], ['plugin', 'Plugins'], ['user', 'Users'],
];
