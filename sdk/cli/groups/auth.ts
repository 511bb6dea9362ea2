import type { Command } from 'commander';
import { common, lazy, run } from '../command-kit.ts';

const auth = () => import('../commands/auth.ts');

export function registerAuth(program: Command): void {
  const group = program.command('auth').description('board API keys through the command-line auth challenge');
  common(group.command('login').description('open a challenge, wait for a board user to approve it, and store the board API key it hands over'))
    .option('--client-name <name>', 'shown to the approving user', 'keel')
    .option('--key-name <name>', 'the name of the key to mint')
    .option('--no-save', 'print the key (once) instead of storing it in <data dir>/credentials.json')
    .option('--interval <seconds>', 'how often to ask whether it was approved', '2')
    .action(run(lazy(auth, 'loginCommand')));
  common(group.command('whoami').description('the board identity behind the key in use')).action(run(lazy(auth, 'whoamiCommand')));
  common(group.command('logout').description('revoke the board API key in use and forget the stored one')).action(run(lazy(auth, 'logoutCommand')));
}
