import { Command } from 'commander';
import { common, lazy, run } from './command-kit.ts';
import { registerAgent } from './groups/agent.ts';
import { registerAuth } from './groups/auth.ts';
import { registerCompany } from './groups/company.ts';
import { registerContext } from './groups/context.ts';
import { registerModelProvider } from './groups/model-provider.ts';
import { registerOperations } from './groups/operations.ts';
import { registerWork } from './groups/work.ts';
import { cliVersion } from './version.ts';

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

  registerContext(program);
  registerAuth(program);
  registerAgent(program);
  registerCompany(program);
  registerWork(program);
  registerOperations(program);
  registerModelProvider(program);
  return program;
}
