import { Option, type Command } from 'commander';
import { common, lazy, run } from '../command-kit.ts';

const context = () => import('../commands/context.ts');

/** Profiles of `{apiBase, companyId, persona, agentId, apiKeyEnvVarName}` in the context file. */
export function registerContext(program: Command): void {
  const group = program.command('context').description('profiles saying which server, company and identity commands use');
  common(group.command('show').description('the profile in use and what it resolves to')).option('-C, --company-id <id>', 'as a command would be given it').action(run(lazy(context, 'showCommand')));
  common(group.command('list').description('the profiles of the context file')).action(run(lazy(context, 'listCommand')));
  common(group.command('use <profile>').description('make a profile the current one')).action(run(lazy(context, 'useCommand')));
  common(group.command('set').description('write fields into a profile (--profile, default the current one; created when new)'))
    .option('-C, --company-id <id>', 'the profile\'s company')
    .addOption(new Option('--persona <persona>', 'who the profile acts as').choices(['board', 'agent']))
    .option('--agent-id <id>', 'the agent of an agent profile')
    .option('--api-key-env-var-name <name>', 'the environment variable that holds the key (the key itself is never stored here)')
    .option('--unset <fields...>', 'remove fields')
    .option('--use', 'make the profile current')
    .action(run(lazy(context, 'setCommand')));
}
