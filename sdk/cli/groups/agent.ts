import type { Command } from 'commander';
import { common, lazy, run, scoped } from '../command-kit.ts';

const agent = () => import('../commands/agent.ts');
const localCli = lazy(() => import('../commands/local-cli.ts'), 'localCliCommand');
const instructions = () => import('../commands/instructions.ts');

/** The agent group: one command per row of the API's agent table. */
export function registerAgent(program: Command): void {
  const group = program.command('agent').description('agents: read, create and hire, lifecycle, wakes, configuration, runtime, skills, local use (an agent is named by id, or by shortname with a company)');
  const id = (name: string, description: string) => scoped(group.command(`${name} <idOrShortname>`).description(description));

  common(group.command('me').description('the calling agent (GET /api/agents/me; an agent key)')).action(run(lazy(agent, 'meCommand')));
  common(group.command('inbox').description("the calling agent's compact inbox (an agent key)")).action(run(lazy(agent, 'inboxCommand')));
  common(group.command('inbox-mine').description("inbox items a board user touched, in the calling agent's company (an agent key)"))
    .option('--user-id <id>', 'the board user').option('--status <csv>', 'issue statuses (default: all but cancelled)').option('--limit <n>', '1-500, default 100')
    .action(run(lazy(agent, 'inboxMineCommand')));
  scoped(group.command('list').description("the company's agents")).action(run(lazy(agent, 'listCommand')));
  id('get', 'one agent').action(run(lazy(agent, 'getCommand')));
  scoped(group.command('create').description('create an agent, idle at once (board); the payload is checked against the server\'s schema first'))
    .option('--payload-json <json>', 'the agent as JSON (or @file.json)').action(run(lazy(agent, 'createCommand')));
  scoped(group.command('hire').description('hire an agent (waits for approval when the company requires it); the payload is checked first'))
    .option('--payload-json <json>', 'the agent as JSON (or @file.json)').action(run(lazy(agent, 'hireCommand')));
  id('update', 'change an agent (PATCH); the payload is checked first').option('--payload-json <json>', 'the fields as JSON (or @file.json)').action(run(lazy(agent, 'updateCommand')));
  id('delete', 'delete an agent for good').option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(agent, 'deleteCommand')));
  id('pause', 'pause an agent').option('--reason <text>', 'why (default manual)').action(run(lazy(agent, 'pauseCommand')));
  id('resume', 'resume a paused agent').action(run(lazy(agent, 'resumeCommand')));
  id('approve', 'approve a pending hire').action(run(lazy(agent, 'approveCommand')));
  id('terminate', 'terminate an agent').action(run(lazy(agent, 'terminateCommand')));
  id('wake', 'wake an agent: queue a run')
    .option('--source <source>', 'timer, assignment, on_demand (default), automation').option('--trigger <detail>', 'manual (default), ping, callback, system')
    .option('--reason <text>', 'why').option('--payload-json <json>', 'the wake payload (issueId binds the run to an issue, taskKey names a task)')
    .option('--idempotency-key <key>', 'the same key gives back the same wakeup and run').option('--force-fresh-session', 'do not hand the task\'s adapter session to the run')
    .action(run(lazy(agent, 'wakeCommand')));
  id('heartbeat:invoke', 'a heartbeat now (a timer wake)').action(run(lazy(agent, 'heartbeatInvokeCommand')));
  id('test', "test the agent's tool before a wake: its version check and one minimal model call, each check with its fix (exits 1 when one failed)").action(run(lazy(agent, 'testCommand')));
  id('claude-login', "Claude Code's login or token set-up for an alpha_local agent: what the operator does next").action(run(lazy(agent, 'vendorLoginCommand')));
  id('permissions:update', "change an agent's permissions")
    .option('--can-create-agents <bool>', 'true or false').option('--can-assign-tasks <bool>', 'true or false').option('--payload-json <json>', 'the permissions as JSON')
    .action(run(lazy(agent, 'permissionsUpdateCommand')));
  id('configuration', 'the configuration, secrets masked').action(run(lazy(agent, 'configurationCommand')));
  id('config-revisions', 'configuration history, newest first').action(run(lazy(agent, 'configRevisionsCommand')));
  scoped(group.command('config-revision:get <idOrShortname> <revisionId>').description('one configuration revision')).action(run(lazy(agent, 'configRevisionGetCommand')));
  scoped(group.command('config-revision:rollback <idOrShortname> <revisionId>').description('restore a configuration revision')).action(run(lazy(agent, 'configRevisionRollbackCommand')));
  id('runtime-state', 'runtime state: session, last run, totals').action(run(lazy(agent, 'runtimeStateCommand')));
  id('runtime-state:reset-session', "forget the adapter session of one task (--task-key) or every task").option('--task-key <key>', 'the task').action(run(lazy(agent, 'resetSessionCommand')));
  id('task-sessions', 'adapter sessions per task').action(run(lazy(agent, 'taskSessionsCommand')));
  id('skills', "the agent's skills (desired state)").action(run(lazy(agent, 'skillsCommand')));
  id('skills:sync', 'set the desired skills (required skills stay)').option('--desired-skills <csv>', 'skill keys, slugs or ids, comma-separated').action(run(lazy(agent, 'skillsSyncCommand')));
  id('instructions-bundle', "the agent's instructions: a managed bundle of files, or an external path (GET .../instructions-bundle)").action(run(lazy(instructions, 'instructionsBundleCommand')));
  id('instructions-path:update', "point the agent at an external instructions file (relative paths need adapterConfig.cwd)")
    .option('--path <path>', 'the instructions file').option('--adapter-config-key <key>', 'the adapterConfig key holding it (default instructionsFilePath; process adapters name it once)')
    .action(run(lazy(instructions, 'instructionsPathUpdateCommand')));
  id('instructions-bundle:update', "switch the bundle between managed and external, or change its entry file")
    .option('--mode <mode>', 'managed or external').option('--entry-file <file>', 'the bundle file agents read first (default AGENTS.md)')
    .option('--path <path>', 'the external path (with --mode external)').option('--adapter-config-key <key>', 'the adapterConfig key holding it')
    .action(run(lazy(instructions, 'instructionsBundleUpdateCommand')));
  id('instructions-file:get', 'print a file of the managed bundle').option('--path <path>', 'the file in the bundle')
    .action(run(lazy(instructions, 'instructionsFileGetCommand')));
  id('instructions-file:put', 'write a file of the managed bundle').option('--path <path>', 'the file in the bundle')
    .option('--content <text>', 'the content').option('--content-file <file>', 'read the content from a file')
    .option('--clear-legacy-prompt-template', "remove adapterConfig.promptTemplate, which the bundle replaces")
    .action(run(lazy(instructions, 'instructionsFilePutCommand')));
  id('instructions-file:delete', 'delete a file of the managed bundle').option('--path <path>', 'the file in the bundle')
    .action(run(lazy(instructions, 'instructionsFileDeleteCommand')));
  id('local-cli', 'mint a key, link the bundled skills and print the exports a local coding tool needs to act as the agent')
    .option('--key-name <name>', 'the key\'s name', 'local-cli').option('--no-install-skills', 'do not link the bundled skills')
    .action(run(localCli));
}
