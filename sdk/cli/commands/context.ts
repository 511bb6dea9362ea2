import { checkProfile, checkProfileName, PROFILE_FIELDS, readContext, writeContext, type Profile } from '../context-store.ts';
import { CliError, emit, optionalCompanyId, session, table, type GlobalOptions } from '../output.ts';
import { contextLocation } from '../session.ts';

type Options = GlobalOptions & { persona?: string; agentId?: string; apiKeyEnvVarName?: string; use?: boolean; unset?: string[] };

/** `context show`: the profile in use and what it resolves to (the key's source, never the key). */
export async function showCommand(options: Options): Promise<void> {
  const current = session(options);
  const shown = {
    contextFile: current.contextFile,
    currentProfile: current.context.currentProfile,
    profileName: current.profileName,
    profile: current.profile,
    resolved: { apiBase: current.apiBase, apiBaseSource: current.source, companyId: optionalCompanyId(options) ?? null, apiKeySource: current.keySource },
  };
  const lines = [
    `Profile ${current.profileName}${current.profileName === current.context.currentProfile ? ' (current)' : ''} of ${current.contextFile}`,
    ...PROFILE_FIELDS.map((field) => `  ${field.padEnd(17)} ${current.profile[field] ?? '-'}`),
    `API base: ${current.apiBase} (${current.source})`,
    `Company: ${shown.resolved.companyId ?? '-'}`,
    `API key: ${current.keySource ?? 'none'}`,
  ];
  emit(options, lines, shown);
}

export async function listCommand(options: Options): Promise<void> {
  const { contextFile } = contextLocation(options);
  const context = readContext(contextFile);
  const rows = Object.entries(context.profiles).map(([name, profile]) => ({ name, current: name === context.currentProfile, ...profile }));
  const human = table([['', 'PROFILE', 'API_BASE', 'COMPANY_ID', 'PERSONA', 'AGENT_ID', 'API_KEY_ENV_VAR'], ...rows.map((row) => [row.current ? '*' : '', row.name, row.apiBase ?? '', row.companyId ?? '', row.persona ?? '', row.agentId ?? '', row.apiKeyEnvVarName ?? ''])]);
  emit(options, human, { contextFile, currentProfile: context.currentProfile, profiles: rows });
}

export async function useCommand(name: string, options: Options): Promise<void> {
  const { contextFile } = contextLocation(options);
  const context = readContext(contextFile);
  if (!context.profiles[name]) throw new CliError('profile_not_found', `No profile ${name} in ${contextFile} (profiles: ${Object.keys(context.profiles).join(', ')}); create it with keel context set --profile ${name} ...`);
  context.currentProfile = name;
  writeContext(contextFile, context);
  emit(options, `Using profile ${name}`, { contextFile, currentProfile: name, profile: context.profiles[name] });
}

/**
 * `context set`: writes the given fields into a profile (default: the current one; created when
 * new); `--unset <fields...>` removes fields; `--use` makes it current. Values are checked here.
 */
export async function setCommand(options: Options): Promise<void> {
  const { contextFile } = contextLocation(options);
  const context = readContext(contextFile);
  const name = checkProfileName(options.profile ?? context.currentProfile);
  const given: Record<string, string | undefined> = {
    apiBase: options.apiBase, companyId: options.companyId, persona: options.persona, agentId: options.agentId, apiKeyEnvVarName: options.apiKeyEnvVarName,
  };
  if (Object.values(given).every((v) => v === undefined) && !options.unset?.length && !options.use) {
    throw new CliError('usage', `Nothing to set: pass any of --api-base, --company-id, --persona board|agent, --agent-id, --api-key-env-var-name, --unset <fields...> or --use`);
  }
  const merged: Record<string, unknown> = { ...context.profiles[name] };
  for (const field of options.unset ?? []) {
    if (!(PROFILE_FIELDS as readonly string[]).includes(field)) throw new CliError('usage', `--unset takes profile fields (${PROFILE_FIELDS.join(', ')}), got ${field}`);
    delete merged[field];
  }
  for (const [field, value] of Object.entries(given)) if (value !== undefined) merged[field] = value;
  const profile: Profile = checkProfile(`profile ${name}`, merged);
  context.profiles[name] = profile;
  if (options.use) context.currentProfile = name;
  writeContext(contextFile, context);
  emit(options, [`Saved profile ${name} in ${contextFile}${options.use ? ' (now current)' : ''}`, ...PROFILE_FIELDS.filter((f) => profile[f]).map((f) => `  ${f.padEnd(17)} ${profile[f]}`)], { contextFile, currentProfile: context.currentProfile, profileName: name, profile });
}
