import { Option, type Command } from 'commander';
import { common, lazy, run, scoped } from '../command-kit.ts';

const approval = () => import('../commands/approval.ts');
const secret = () => import('../commands/secret.ts');
const cost = () => import('../commands/cost.ts');
const skill = () => import('../commands/skill.ts');
const runs = () => import('../commands/run.ts');
const dashboard = () => import('../commands/dashboard.ts');

/** approval, secret, cost, budget, activity, skill, run and backup. */
export function registerOperations(program: Command): void {
  const approvals = program.command('approval').description('approvals: list, read, decide');
  scoped(approvals.command('list').description("the company's approvals, newest first")).option('--status <csv>', 'only these statuses').action(run(lazy(approval, 'listCommand')));
  common(approvals.command('get <approvalId>').description('one approval')).action(run(lazy(approval, 'getCommand')));
  for (const [name, action, what] of [['approve', 'approveCommand', 'approve'], ['reject', 'rejectCommand', 'reject'], ['request-revision', 'requestRevisionCommand', 'ask for a revision of']] as const) {
    common(approvals.command(`${name} <approvalId>`).description(`${what} an approval (board)`)).option('--note <text>', 'the decision note').action(run(lazy(approval, action)));
  }

  const secrets = program.command('secret').description('company secrets; values come from stdin or --value-file, never from a flag');
  const valueSource = (command: Command) => command
    .option('--value-file <path>', 'read the value from this file (default: stdin)').option('--keep-newline', 'keep a trailing newline of the value');
  scoped(secrets.command('list').description('secret metadata, newest first')).action(run(lazy(secret, 'listCommand')));
  scoped(secrets.command('providers').description('the secret providers')).action(run(lazy(secret, 'providersCommand')));
  valueSource(scoped(secrets.command('create').description('store a secret')))
    .option('--name <name>', 'its name (unique in the company)').option('--description <text>', 'what it is').option('--provider <id>', 'the provider').option('--external-ref <ref>', 'its reference in an external provider')
    .action(run(lazy(secret, 'createCommand')));
  valueSource(common(secrets.command('rotate <secretId>').description('store a new version of a secret'))).option('--external-ref <ref>', 'a new external reference').action(run(lazy(secret, 'rotateCommand')));
  common(secrets.command('update <secretId>').description("change a secret's name, description or external reference (never the value)"))
    .option('--name <name>', 'new name').option('--description <text>', 'new description').option('--external-ref <ref>', 'new external reference').action(run(lazy(secret, 'updateCommand')));
  common(secrets.command('delete <secretId>').description('delete a secret, every version and grant')).option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(secret, 'deleteCommand')));

  const costs = program.command('cost').description('spend');
  const period = (command: Command) => command.option('--from <iso>', 'from (ISO date-time)').option('--to <iso>', 'to (ISO date-time)');
  period(scoped(costs.command('summary').description("the company's spend against its budget"))).action(run(lazy(cost, 'summaryCommand')));
  period(scoped(costs.command('breakdown').description('spend per agent, agent and model, provider, biller, project, source (gateway, adapter, ...) or source and model')))
    .addOption(new Option('--by <what>', 'the breakdown').choices(['agent', 'agent-model', 'provider', 'biller', 'project', 'source', 'source-model']).default('agent'))
    .action(run(lazy(cost, 'breakdownCommand')));
  scoped(costs.command('windows').description('rolling spend over 5h, 24h and 7d')).action(run(lazy(cost, 'windowsCommand')));

  scoped(program.command('dashboard').description("the company at a glance: agents and their runs, stops, the month's spend, approvals, work and the last days"))
    .option('--days <n>', 'how many UTC days of runs, spend and issues (1-90)', '14').action(run(lazy(dashboard, 'dashboardCommand')));

  const budgets = program.command('budget').description('budgets and their incidents');
  scoped(budgets.command('overview').description('policies, incidents and paused counts')).action(run(lazy(cost, 'budgetOverviewCommand')));
  scoped(budgets.command('set <cents>').description("the company's monthly budget in cents, or an agent's with --agent")).option('--agent <idOrShortname>', 'the agent').action(run(lazy(cost, 'budgetSetCommand')));
  scoped(budgets.command('policy').description('create or update a budget policy')).option('--payload-json <json>', '{scopeType, scopeId?, amount, metric?, windowKind?, warnPercent?, hardStopEnabled?, ...}').action(run(lazy(cost, 'budgetPolicyCommand')));
  scoped(budgets.command('resolve <incidentId>').description('resolve a budget incident'))
    .option('--action <action>', 'keep_paused or raise_budget_and_resume').option('--amount <cents>', 'the new amount (raise_budget_and_resume)').option('--note <text>', 'a note')
    .action(run(lazy(cost, 'budgetResolveCommand')));

  scoped(program.command('activity').description("the company's activity log, newest first"))
    .option('--agent-id <id>', 'only entries about this agent').option('--entity-type <type>', 'only this entity type').option('--entity-id <id>', 'only this entity')
    .action(run(lazy(() => import('../commands/activity.ts'), 'listCommand')));

  const skills = program.command('skill').description('company skills and the skill catalog');
  scoped(skills.command('list').description("the company's skills")).action(run(lazy(skill, 'listCommand')));
  scoped(skills.command('get <skillId>').description('one skill with its SKILL.md')).action(run(lazy(skill, 'getCommand')));
  common(skills.command('catalog').description('the skill catalog'))
    .addOption(new Option('--kind <kind>', 'bundled or optional').choices(['bundled', 'optional'])).option('--category <category>', 'one category').option('--query <words>', 'words to look for')
    .action(run(lazy(skill, 'catalogCommand')));
  scoped(skills.command('install <catalogSkillId>').description('install a catalog skill into the company')).option('--slug <slug>', 'another slug').option('--force', 'replace local changes').action(run(lazy(skill, 'installCommand')));
  scoped(skills.command('import <source>').description('import skills from a repository or URL')).action(run(lazy(skill, 'importCommand')));
  scoped(skills.command('create').description('create an editable skill')).option('--name <name>', 'its name').option('--slug <slug>', 'its slug').option('--description <text>', 'what it is for').action(run(lazy(skill, 'createCommand')));
  scoped(skills.command('delete <skillId>').description('delete a skill')).option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(skill, 'deleteCommand')));

  const runGroup = program.command('run').description('heartbeat runs: list, show, log, follow, cancel');
  scoped(runGroup.command('list').description("the company's runs, newest first"))
    .option('--agent <idOrShortname>', 'one agent\'s').option('--status <status>', 'only this status').option('--limit <n>', '1-200, default 50').option('--cursor <cursor>', 'the next page')
    .action(run(lazy(runs, 'listCommand')));
  common(runGroup.command('show <runId>').description('one run')).action(run(lazy(runs, 'showCommand')));
  common(runGroup.command('log <runId>').description("a run's log so far")).option('--offset <bytes>', 'from this byte', '0').option('--limit-bytes <n>', 'page size').action(run(lazy(runs, 'logCommand')));
  common(runGroup.command('follow <runId>').description('print the log as it grows until the run ends; exit 0 only if it succeeded'))
    .option('--offset <bytes>', 'from this byte', '0').option('--interval <seconds>', 'how often to look for more', '1')
    .action(run(lazy(runs, 'followCommand')));
  common(runGroup.command('cancel <runId>').description('cancel a queued or running run')).action(run(lazy(runs, 'cancelCommand')));

  common(program.command('backup').description('back up the database now (instance admins)')).action(run(lazy(() => import('../commands/backup.ts'), 'backupCommand')));
}
