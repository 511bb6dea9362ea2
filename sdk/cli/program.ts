import { Command, Option } from 'commander';
import { report, type GlobalOptions } from './output.ts';
import { cliVersion } from './version.ts';

type Action = (...args: any[]) => Promise<void>;

/**
 * Commands load on use: `keel plugin list` should not pay for esbuild and the manifest schema.
 * The imports are literal so that the packed SDK's bundler splits each command into its own chunk.
 */
function lazy<M>(load: () => Promise<M>, name: keyof M & string): Action {
  return async (...args: unknown[]) => {
    const loaded = await load() as Record<string, Action>;
    await loaded[name]!(...args);
  };
}
const manage = () => import('./commands/manage.ts');
const buildCommand = lazy(() => import('./commands/build.ts'), 'buildCommand');
const createCommand = lazy(() => import('./commands/create.ts'), 'createCommand');
const devCommand = lazy(() => import('./commands/dev.ts'), 'devCommand');
const testCommand = lazy(() => import('./commands/test.ts'), 'testCommand');
const installCommand = lazy(manage, 'installCommand');
const listCommand = lazy(manage, 'listCommand');
const enableCommand = lazy(manage, 'enableCommand');
const disableCommand = lazy(manage, 'disableCommand');
const upgradeCommand = lazy(manage, 'upgradeCommand');
const uninstallCommand = lazy(manage, 'uninstallCommand');

/**
 * The server's address, key and output format on a command. Without --api-base the address is
 * the server's own, from the flags and environment variables the server reads
 * (server-address.ts), so `keel` finds a server started with the same settings.
 */
function common(command: Command): Command {
  return command
    .option('--api-base <url>', 'where the kernel listens (env KEEL_API_BASE; default: the address the server uses for the data directory below)')
    .option('--data-dir <dir>', "the server's data directory, whose config.json names its host and port (env KEEL_HOME; default ~/.keel)")
    .option('--config <file>', "the server's configuration file (env KEEL_CONFIG; default <data dir>/config.json)")
    .option('--host <host>', "the server's host (env HOST; 0.0.0.0 and :: are contacted on loopback)")
    .option('--port <port>', "the server's port (env PORT; default 3100)")
    .addOption(new Option('--api-key <key>', 'board API key (not needed in local_trusted mode)').env('KEEL_API_KEY'))
    .option('--json', 'print machine-readable JSON', false);
}

/** Runs an action; any failure is reported once, in the requested format, with exit code 1. */
function run(action: Action): Action {
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

export function buildProgram(): Command {
  const program = new Command('keel').description('Command-line client of Keel').showHelpAfterError()
    .version(cliVersion(), '-v, --version', 'print the version of keel');
  const plugin = program.command('plugin').description('build, test, run and manage plugins');

  common(plugin.command('create <name>').description('scaffold a plugin folder <dir>/<name> that builds and passes its generated test; outside the Keel checkout, a project of its own'))
    .option('--dir <dir>', 'plugins, examples, or a path', '.')
    .option('--sdk <tarballOrFolderOrRange>', "the project's @keel/sdk dependency outside the checkout (default: the SDK packed into the new folder)")
    .action(run(createCommand));
  common(plugin.command('build <folder>').description('validate plugin.json and bundle the plugin to <folder>/dist/plugin.js'))
    .action(run(buildCommand));
  common(plugin.command('test <folder>').description("run the plugin's own tests on sdk/testing (no database needed)"))
    .action(run(testCommand));
  common(plugin.command('dev <folder>').description('install the folder into the running kernel, then rebuild and hot-swap it on every change'))
    .action(run(devCommand));
  common(plugin.command('install <pathOrPackage>').description('install a plugin from a folder or an npm package'))
    .option('--enable', 'enable it right away, granting every capability it declares', false)
    .action(run(installCommand));
  common(plugin.command('list').description('installed plugins')).action(run(listCommand));
  common(plugin.command('enable <key>').description('grant capabilities and start the plugin'))
    .option('--grant <capabilities...>', 'grant only these (default: every declared capability)')
    .action(run(enableCommand));
  common(plugin.command('disable <key>').description('stop the plugin and hide its contributions')).action(run(disableCommand));
  common(plugin.command('upgrade <key>').description('re-read the plugin from its source and restart it'))
    .option('--grant <capabilities...>', 'grant capabilities the new version adds (it refuses to start without them)')
    .action(run(upgradeCommand));
  common(plugin.command('uninstall <key>').description('remove the plugin and its data')).action(run(uninstallCommand));
  return program;
}
