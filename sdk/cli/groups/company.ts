import type { Command } from 'commander';
import { common, lazy, run } from '../command-kit.ts';

const company = () => import('../commands/company.ts');
const portability = () => import('../commands/company-portability.ts');

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
  common(group.command('export <companyId>').description('export the company as a package folder (keel.json plus markdown files; secrets become declared inputs)'))
    .option('--out <folder>', 'where to write the package').option('--preview', 'only show what the export would hold')
    .action(run(lazy(portability, 'exportCommand')));
  common(group.command('import <folder>').description('import a package folder into a new company (board), an existing one (--into), or this company (-C)'))
    .option('-C, --company-id <id>', 'import into this company (board or its CEO agent; replace is refused)')
    .option('--into <companyId>', 'board: import into this existing company').option('--name <name>', 'board: the new company\'s name (default: the package\'s)')
    .option('--collision <strategy>', 'rename (default), skip or replace').option('--input <NAME=VALUE...>', 'a declared input\'s value (repeatable)')
    .option('--inputs-file <file>', 'declared inputs as a JSON object').option('--preview', 'show what would be created, updated or skipped; writes nothing')
    .option('--idempotency-key <key>', 'makes a retry safe: the same key imports once')
    .action(run(lazy(portability, 'importCommand')));
  common(group.command('delete <companyId>').description('delete a company and everything in it')).option('--yes', 'confirm: nothing is deleted without it').action(run(lazy(company, 'deleteCommand')));
}
