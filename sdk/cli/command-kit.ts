import { Command, Option } from 'commander';
import { report, type GlobalOptions } from './output.ts';

/** What a command module exports: the arguments, then the options. */
export type Action = (...args: any[]) => Promise<void>;

/**
 * Commands load on use: `keel plugin list` should not pay for esbuild and the manifest schema.
 * Callers pass literal imports so that the packed SDK's bundler splits each module into its own chunk.
 */
export function lazy<M>(load: () => Promise<M>, name: keyof M & string): Action {
  return async (...args: unknown[]) => {
    const loaded = await load() as Record<string, Action>;
    await loaded[name]!(...args);
  };
}

/**
 * The server's address, key, context and output format on a command. Without --api-base the
 * address comes from the profile, else it is the server's own, from the flags and environment
 * variables the server reads (server-address.ts), so `keel` finds a server started with the
 * same settings. session.ts resolves them, in one order for every command.
 */
export function common(command: Command): Command {
  return command
    .option('--api-base <url>', 'where the kernel listens (env KEEL_API_BASE; else the profile\'s; else the address the server uses for the data directory below)')
    .option('--data-dir <dir>', "the data directory: the server's, whose config.json names its host and port, and the CLI's context and credentials (env KEEL_HOME; default ~/.keel)")
    .option('--config <file>', "the server's configuration file (env KEEL_CONFIG; default <data dir>/config.json)")
    .option('--host <host>', "the server's host (env HOST; 0.0.0.0 and :: are contacted on loopback)")
    .option('--port <port>', "the server's port (env PORT; default 3100)")
    .addOption(new Option('--api-key <key>', 'API key: a board key, or an agent key for agent commands (else the profile\'s apiKeyEnvVarName, else the key keel auth login stored; none in local_trusted mode)').env('KEEL_API_KEY'))
    .option('--context <file>', 'the context file (env KEEL_CONTEXT; default <data dir>/context.json)')
    .option('--profile <name>', 'the profile of the context file to use (env KEEL_PROFILE; default its current profile)')
    .option('--json', 'print machine-readable JSON', false);
}

/** A company-scoped command: `-C/--company-id`, else KEEL_COMPANY_ID, else the profile's. */
export function scoped(command: Command): Command {
  return common(command).option('-C, --company-id <id>', 'the company (env KEEL_COMPANY_ID; default the profile\'s companyId)');
}

/** Runs an action; any failure is reported once, in the requested format, with exit code 1. */
export function run(action: Action): Action {
  return async (...args: unknown[]) => {
    const command = args.at(-1) as Command;
    const options = command.opts<GlobalOptions>();
    try {
      await action(...args.slice(0, -2), options);
    } catch (error) {
      report(options, error);
    }
  };
}
