import { join } from 'node:path';
import { KeelClient } from '../client/index.ts';
import { readContext, type ContextFile, type Profile } from './context-store.ts';
import { storedCredential } from './credentials-store.ts';
import { CliError } from './errors.ts';
import { dataDirectory, resolveServerAddress } from './server-address.ts';
import { userPath } from './user-paths.ts';

/** Options every command understands. */
export interface GlobalOptions {
  /** The server's address; without it, worked out from the profile or the four flags below as the server does. */
  apiBase?: string;
  dataDir?: string;
  config?: string;
  host?: string;
  port?: string;
  apiKey?: string;
  /** The context file (default `<data dir>/context.json`) and the profile of it to use. */
  context?: string;
  profile?: string;
  /** Company-scoped commands: `-C`, else `KEEL_COMPANY_ID`, else the profile's. */
  companyId?: string;
  json: boolean;
}

/**
 * Everything an invocation resolves once, in one place and one order for every command:
 * server `--api-base` > `KEEL_API_BASE` > profile > the server's own address (server-address.ts);
 * key `--api-key`/`KEEL_API_KEY` > the profile's `apiKeyEnvVarName` > the key `keel auth login`
 * stored for that server; company `-C` > `KEEL_COMPANY_ID` > profile.
 */
export interface Session {
  dataDir: string;
  contextFile: string;
  credentialsFile: string;
  context: ContextFile;
  profileName: string;
  profile: Profile;
  apiBase: string;
  /** Where the address came from, for messages: `port from /home/me/.keel/config.json`. */
  source: string;
  apiKey?: string;
  /** Where the key came from (`--api-key`, `env SERVICE_API_KEY`, `keel auth login`), or null. */
  keySource: string | null;
}

const sessions = new WeakMap<GlobalOptions, Session>();

/** The data directory and context file alone: `context` commands work with no server at all. */
export function contextLocation(options: GlobalOptions): { dataDir: string; contextFile: string } {
  const dataDir = dataDirectory(options.dataDir === undefined ? undefined : userPath(options.dataDir), process.env);
  const named = options.context ?? process.env.KEEL_CONTEXT;
  return { dataDir, contextFile: named ? userPath(named) : join(dataDir, 'context.json') };
}

/**
 * Worked out on first use only: commands that never call the server (create, build, test)
 * must not fail on a broken config.json or context file.
 */
export function session(options: GlobalOptions): Session {
  const known = sessions.get(options);
  if (known) return known;
  const { dataDir, contextFile } = contextLocation(options);
  const context = readContext(contextFile);
  const profileName = options.profile ?? process.env.KEEL_PROFILE ?? context.currentProfile;
  const profile = context.profiles[profileName];
  if (!profile) {
    if (options.profile ?? process.env.KEEL_PROFILE) throw new CliError('profile_not_found', `No profile ${profileName} in ${contextFile} (profiles: ${Object.keys(context.profiles).join(', ') || 'none'}); create it with keel context set --profile ${profileName} ...`);
  }
  const path = (value: string | undefined) => (value === undefined ? undefined : userPath(value));
  const address = resolveServerAddress({
    apiBase: options.apiBase, dataDir: path(options.dataDir), config: path(options.config), host: options.host, port: options.port,
    profileApiBase: profile?.apiBase, profileName,
  }, process.env);
  const apiBase = address.url.replace(/\/+$/, '');
  const credentialsFile = join(dataDir, 'credentials.json');
  let apiKey = options.apiKey;
  let keySource: string | null = apiKey ? '--api-key or KEEL_API_KEY' : null;
  if (!apiKey && profile?.apiKeyEnvVarName) {
    apiKey = process.env[profile.apiKeyEnvVarName] || undefined;
    if (apiKey) keySource = `env ${profile.apiKeyEnvVarName} (profile ${profileName})`;
  }
  if (!apiKey) {
    const stored = storedCredential(credentialsFile, apiBase);
    if (stored) { apiKey = stored.token; keySource = `keel auth login (${credentialsFile})`; }
  }
  const resolved: Session = { dataDir, contextFile, credentialsFile, context, profileName, profile: profile ?? {}, apiBase, source: address.source, apiKey, keySource };
  sessions.set(options, resolved);
  return resolved;
}

/** The session if one was resolved (error messages must not resolve one themselves). */
export function resolvedSession(options: GlobalOptions): Session | undefined {
  return sessions.get(options);
}

export function clientFor(options: GlobalOptions, timeoutMs?: number): KeelClient {
  const { apiBase, apiKey } = session(options);
  return new KeelClient({ baseUrl: apiBase, token: apiKey, timeoutMs });
}

/** The company of a company-scoped command, or a usage error naming the three ways to give one. */
export function companyIdFor(options: GlobalOptions): string {
  const companyId = optionalCompanyId(options);
  if (!companyId) throw new CliError('company_required', 'This command needs a company: pass -C/--company-id <id>, set KEEL_COMPANY_ID, or store one in the profile with keel context set --company-id <id>');
  return companyId;
}

export function optionalCompanyId(options: GlobalOptions): string | undefined {
  return options.companyId ?? (process.env.KEEL_COMPANY_ID || undefined) ?? session(options).profile.companyId;
}
