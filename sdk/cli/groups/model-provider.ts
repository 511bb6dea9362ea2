import { Option, type Command } from 'commander';
import { common, lazy, run, scoped } from '../command-kit.ts';

const provider = () => import('../commands/model-provider.ts');
const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * `model-provider`: the company's model providers (the gateway's upstreams) and its gateway
 * limits. The provider's key is never a flag's value (the process list shows arguments to every
 * user of the machine): it comes from stdin, a file, or a secret the company already has.
 */
export function registerModelProvider(program: Command): void {
  const group = program.command('model-provider').description("the company's model providers behind the gateway, and its gateway limits; keys come from stdin, a file or a secret, never from a flag");
  const fields = (command: Command) => command
    .option('--name <name>', 'its name (unique in the company)')
    .option('--base-url <url>', "the provider's origin plus any prefix before its versioned paths (https; a private host only when the operator lists it)")
    .option('--api-key-secret <secretId[@version]>', "use one of the company's secrets as the key (default version: latest)")
    .option('--api-key-stdin', 'read the key from stdin; the server stores it in the vault')
    .option('--api-key-file <path>', 'read the key from this file; the server stores it in the vault')
    .option('--price <model=in,cached,write,out>', 'a price table entry in cents per million tokens; repeat for each model (a model ending in * is a prefix)', collect)
    .option('--allow-unpriced-models [true|false]', 'let the gateway pass models without a price (metered at 0 cents)')
    .option('--default [true|false]', 'make it the default provider of its kind (replaces the current default)');

  scoped(group.command('list').description("the company's model providers")).action(run(lazy(provider, 'listCommand')));
  common(group.command('get <providerId>').description('one provider with its price table (never its key)')).action(run(lazy(provider, 'getCommand')));
  fields(scoped(group.command('create').description('add a model provider')))
    .addOption(new Option('--kind <kind>', 'the API it speaks').choices(['anthropic', 'openai', 'gemini']))
    .action(run(lazy(provider, 'createCommand')));
  fields(common(group.command('update <providerId>').description('change a provider; --price entries replace the whole price table')))
    .option('--clear-prices', 'empty the price table')
    .action(run(lazy(provider, 'updateCommand')));
  common(group.command('delete <providerId>').description('delete a provider')).option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(provider, 'deleteCommand')));
  common(group.command('test <providerId>').description('one minimal call through the gateway; its latency or the error (exit 1 when it failed)'))
    .option('--model <name>', 'the model to call (default: the first exact name of the price table)')
    .action(run(lazy(provider, 'testCommand')));

  const limits = group.command('limits').description("the company's gateway limits: calls and tokens per minute");
  scoped(limits.command('get').description('the limits now')).action(run(lazy(provider, 'limitsGetCommand')));
  scoped(limits.command('set').description('set the limits; a limit not given keeps its value'))
    .option('--calls-per-minute <n|none>', 'calls per minute for the whole company, or none')
    .option('--tokens-per-minute <n|none>', 'tokens per minute for the whole company, or none')
    .action(run(lazy(provider, 'limitsSetCommand')));
}
