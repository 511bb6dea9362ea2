import { CliError, clientFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';
import { parsePayload } from './payload.ts';

/** Companies (docs/api/companies.md). */
type Options = GlobalOptions & Record<string, any>;

export async function listCommand(options: Options): Promise<void> {
  const companies = await clientFor(options).get<unknown[]>('/api/companies', { includeArchived: options.includeArchived ? 'true' : undefined });
  emitList(options, companies, ['id', 'name', 'issuePrefix', 'status', 'budgetMonthlyCents'], 'No companies');
}

export async function getCommand(id: string, options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get(path`/api/companies/${id}`));
}

export async function statsCommand(options: Options): Promise<void> {
  const stats = await clientFor(options).get<Record<string, { agentCount: number; issueCount: number }>>('/api/companies/stats');
  emitList(options, Object.entries(stats).map(([companyId, s]) => ({ companyId, ...s })), ['companyId', 'agentCount', 'issueCount'], 'No companies', stats);
}

export async function createCommand(options: Options): Promise<void> {
  const body: Record<string, unknown> = options.payloadJson !== undefined ? parsePayload(options.payloadJson) : {};
  if (options.name !== undefined) body.name = options.name;
  if (options.description !== undefined) body.description = options.description;
  if (options.budgetMonthlyCents !== undefined) body.budgetMonthlyCents = cents(options.budgetMonthlyCents);
  if (body.name === undefined) throw new CliError('usage', 'company create needs --name <name>');
  const company = await clientFor(options).create<Record<string, any>>('/api/companies', body);
  emit(options, [`Created company ${company.name} (${company.id}), issue prefix ${company.issuePrefix}`, `Make it the default: keel context set --company-id ${company.id}`], company);
}

export async function updateCommand(id: string, options: Options): Promise<void> {
  const company = await clientFor(options).patch<Record<string, any>>(path`/api/companies/${id}`, parsePayload(options.payloadJson));
  emit(options, `Updated company ${company.name} (${company.status})`, company);
}

export async function archiveCommand(id: string, options: Options): Promise<void> {
  const company = await clientFor(options).post<Record<string, any>>(path`/api/companies/${id}/archive`, {});
  emit(options, `Archived company ${company.name}`, company);
}

export async function deleteCommand(id: string, options: Options): Promise<void> {
  if (!options.yes) throw new CliError('confirmation_required', `Deleting a company removes it and everything in it for good; run again with --yes to delete ${id}`);
  const answer = await clientFor(options).delete(path`/api/companies/${id}`);
  emit(options, `Deleted company ${id}`, answer);
}

/** A whole number of cents from a flag. */
export function cents(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new CliError('usage', `Expected a whole, non-negative number of cents, got ${JSON.stringify(value)}`);
  return number;
}
