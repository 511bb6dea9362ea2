import type { Command } from 'commander';
import { common, lazy, run, scoped } from '../command-kit.ts';

const work = () => import('../commands/work.ts');

export function registerWork(program: Command): void {
  const issue = program.command('issue').description('issues and comments');
  const fields = (command: Command) => command
    .option('--title <title>', 'title').option('--description <text>', 'description').option('--status <status>', 'backlog, todo, in_progress, in_review, done, blocked, cancelled')
    .option('--priority <priority>', 'critical, high, medium, low').option('--assignee-agent-id <id>', 'the agent to assign ("null" clears)').option('--project-id <id>', 'the project ("null" clears)')
    .option('--goal-id <id>', 'the goal').option('--parent-id <id>', 'the parent issue').option('--payload-json <json>', 'the fields as JSON (flags add to it)');
  scoped(issue.command('list').description("the company's issues, newest first"))
    .option('--status <csv>', 'statuses').option('--assignee-agent-id <id>', 'assigned to this agent').option('--project-id <id>', 'in this project')
    .option('--query <text>', 'words in the title, identifier or description').option('--limit <n>', '1-200, default 50').option('--cursor <cursor>', 'the next page')
    .action(run(lazy(work, 'issueListCommand')));
  common(issue.command('get <issueId>').description('one issue (id or identifier such as ACME-12)')).action(run(lazy(work, 'issueGetCommand')));
  fields(scoped(issue.command('create').description('create an issue'))).option('--idempotency-key <key>', 'a retry with the same key creates nothing new').action(run(lazy(work, 'issueCreateCommand')));
  fields(common(issue.command('update <issueId>').description('change an issue'))).action(run(lazy(work, 'issueUpdateCommand')));
  common(issue.command('comment <issueId>').description('comment on an issue')).option('--body <text>', 'the comment').option('--parent-comment-id <id>', 'the comment answered').action(run(lazy(work, 'issueCommentCommand')));
  common(issue.command('comments <issueId>').description("an issue's comments, oldest first")).action(run(lazy(work, 'issueCommentsCommand')));
  common(issue.command('checkout <issueId>').description('check an issue out for the calling agent\'s run (an agent key)'))
    .option('--agent-id <id>', 'the calling agent').option('--expected-statuses <csv>', 'refuse unless the issue is in one of these').action(run(lazy(work, 'issueCheckoutCommand')));
  common(issue.command('release <issueId>').description('release a checked-out issue')).action(run(lazy(work, 'issueReleaseCommand')));
  common(issue.command('activity <issueId>').description("an issue's activity, newest first")).action(run(lazy(work, 'issueActivityCommand')));

  const project = program.command('project').description('projects');
  const projectFields = (command: Command) => command
    .option('--name <name>', 'name').option('--description <text>', 'description').option('--status <status>', 'backlog, planned, in_progress, completed, cancelled')
    .option('--lead-agent-id <id>', 'the lead agent').option('--goal-id <id>', 'the goal').option('--target-date <date>', 'YYYY-MM-DD').option('--color <color>', '#rrggbb')
    .option('--payload-json <json>', 'the fields as JSON (flags add to it)');
  scoped(project.command('list').description("the company's projects")).option('--status <status>', 'only this status').option('--include-archived', 'archived ones too').action(run(lazy(work, 'projectListCommand')));
  common(project.command('get <projectId>').description('one project')).action(run(lazy(work, 'projectGetCommand')));
  projectFields(scoped(project.command('create').description('create a project'))).action(run(lazy(work, 'projectCreateCommand')));
  projectFields(common(project.command('update <projectId>').description('change a project'))).action(run(lazy(work, 'projectUpdateCommand')));
}
