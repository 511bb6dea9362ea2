import type { Command } from 'commander';
import { common, lazy, run } from '../command-kit.ts';

const company = () => import('../commands/company.ts');

export function registerCompany(program: Command): void {
  const group = program.command('company').description('companies');
  common(group.command('list').description('companies you can reach')).option('--include-archived', 'archived ones too').action(run(lazy(company, 'listCommand')));
  common(group.command('get <companyId>').description('one company')).action(run(lazy(company, 'getCommand')));
  common(group.command('stats').description('agent and issue counts per company')).action(run(lazy(company, 'statsCommand')));
  common(group.command('create').description('create a company'))
    .option('--name <name>', 'its name').option('--description <text>', 'what it does').option('--budget-monthly-cents <cents>', 'a monthly budget (creates a budget policy)')
    .option('--payload-json <json>', 'the company as JSON (flags add to it)')
    .action(run(lazy(company, 'createCommand')));
  common(group.command('update <companyId>').description('change a company')).option('--payload-json <json>', 'the fields as JSON').action(run(lazy(company, 'updateCommand')));
  common(group.command('archive <companyId>').description('archive a company (its work stops)')).action(run(lazy(company, 'archiveCommand')));
  common(group.command('delete <companyId>').description('delete a company and everything in it')).option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(company, 'deleteCommand')));
}
