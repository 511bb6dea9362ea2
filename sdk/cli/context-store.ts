import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError } from './errors.ts';

/**
 * Contexts: named profiles saying which server, company and identity a command uses, stored in
 * `<data dir>/context.json` (or the file `--context` names). A profile holds no key, only the
 * name of the environment variable that holds one, so the file can be shared or committed.
 */
export interface Profile {
  apiBase?: string;
  companyId?: string;
  persona?: 'board' | 'agent';
  agentId?: string;
  apiKeyEnvVarName?: string;
}

export interface ContextFile {
  version: 1;
  currentProfile: string;
  profiles: Record<string, Profile>;
}

export const PROFILE_FIELDS = ['apiBase', 'companyId', 'persona', 'agentId', 'apiKeyEnvVarName'] as const;
const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export function emptyContext(): ContextFile {
  return { version: 1, currentProfile: 'default', profiles: { default: {} } };
}

export function readContext(file: string): ContextFile {
  if (!existsSync(file)) return emptyContext();
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliError('invalid_context', `Cannot read the context file ${file}: ${(error as Error).message}`);
  }
  const context = parsed as Partial<ContextFile> | null;
  if (!context || typeof context !== 'object' || typeof context.profiles !== 'object' || context.profiles === null || Array.isArray(context.profiles)) {
    throw new CliError('invalid_context', `The context file ${file} has no "profiles" object`);
  }
  const profiles: Record<string, Profile> = {};
  for (const [name, profile] of Object.entries(context.profiles)) profiles[name] = checkProfile(`${file}: profile ${name}`, profile);
  const currentProfile = typeof context.currentProfile === 'string' && context.currentProfile ? context.currentProfile : 'default';
  return { version: 1, currentProfile, profiles };
}

/** Written to a temporary file and renamed, so a crash never leaves half a file. */
export function writeContext(file: string, context: ContextFile): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(context, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

export function checkProfileName(name: string): string {
  if (!PROFILE_NAME.test(name)) throw new CliError('invalid_profile', `A profile name is 1-64 letters, digits, ".", "_" or "-" (starting with a letter or digit), got ${JSON.stringify(name)}`);
  return name;
}

/** Every field checked, so that a bad value is refused when set rather than when used. */
export function checkProfile(where: string, raw: unknown): Profile {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError('invalid_context', `${where} is not an object`);
  const profile: Profile = {};
  for (const [field, value] of Object.entries(raw as Record<string, unknown>)) {
    if (value === undefined || value === null || value === '') continue;
    if (!(PROFILE_FIELDS as readonly string[]).includes(field)) throw new CliError('invalid_context', `${where}: unknown field ${field} (fields: ${PROFILE_FIELDS.join(', ')})`);
    if (typeof value !== 'string') throw new CliError('invalid_context', `${where}: ${field} must be a string`);
    if (field === 'apiBase' && !/^https?:\/\/[^\s]+$/.test(value)) throw new CliError('invalid_context', `${where}: apiBase must be an http(s) URL, got ${JSON.stringify(value)}`);
    if (field === 'persona' && value !== 'board' && value !== 'agent') throw new CliError('invalid_context', `${where}: persona must be board or agent, got ${JSON.stringify(value)}`);
    if (field === 'apiKeyEnvVarName' && !ENV_NAME.test(value)) throw new CliError('invalid_context', `${where}: apiKeyEnvVarName must be an environment variable name, got ${JSON.stringify(value)}`);
    (profile as Record<string, string>)[field] = field === 'apiBase' ? value.replace(/\/+$/, '') : value;
  }
  return profile;
}
