import { CliError, clientFor, companyIdFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';

/** Company skills and the catalog (plugins/skills; docs/api/skills.md). */
type Options = GlobalOptions & Record<string, any>;

export async function listCommand(options: Options): Promise<void> {
  const skills = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/skills`);
  emitList(options, skills, ['id', 'key', 'name', 'sourceType', 'trustLevel', 'attachedAgentCount'], 'No skills');
}

export async function getCommand(id: string, options: Options): Promise<void> {
  const skill = await clientFor(options).get<Record<string, unknown>>(path`/api/companies/${companyIdFor(options)}/skills/${id}`);
  if (options.json) return emit(options, '', skill);
  const { markdown, ...rest } = skill;
  emitRecord(options, rest);
  if (typeof markdown === 'string') process.stdout.write(`\n${markdown}\n`);
}

export async function catalogCommand(options: Options): Promise<void> {
  const skills = await clientFor(options).get<unknown[]>('/api/skills/catalog', { kind: options.kind, category: options.category, q: options.query });
  emitList(options, skills, ['slug', 'kind', 'category', 'trustLevel', 'description'], 'No catalog skills');
}

export async function installCommand(catalogSkillId: string, options: Options): Promise<void> {
  const answer = await clientFor(options).post<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/skills/install-catalog`, { catalogSkillId, ...(options.slug ? { slug: options.slug } : {}), ...(options.force ? { force: true } : {}) });
  emit(options, [`${answer.action}: ${answer.skill?.key} (${answer.skill?.id})`, ...(answer.warnings ?? []).map((w: string) => `warning: ${w}`)], answer);
}

export async function importCommand(source: string, options: Options): Promise<void> {
  const answer = await clientFor(options).post<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/skills/import`, { source });
  emit(options, [...(answer.imported ?? []).map((s: Record<string, string>) => `imported ${s.key} (${s.id})`), ...(answer.warnings ?? []).map((w: string) => `warning: ${w}`)], answer);
}

export async function createCommand(options: Options): Promise<void> {
  if (!options.name) throw new CliError('usage', 'skill create needs --name <name>');
  const skill = await clientFor(options).create<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/skills`, { name: options.name, ...(options.slug ? { slug: options.slug } : {}), ...(options.description ? { description: options.description } : {}) });
  emit(options, `Created skill ${skill.key} (${skill.id})`, skill);
}

export async function deleteCommand(id: string, options: Options): Promise<void> {
  if (!options.yes) throw new CliError('confirmation_required', `Deleting a skill removes its files for good; run again with --yes to delete ${id}`);
  const answer = await clientFor(options).delete<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/skills/${id}`);
  emit(options, `Deleted skill ${answer.key ?? id}`, answer);
}
