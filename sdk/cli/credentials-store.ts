import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError } from './errors.ts';

/**
 * Board API keys received by `keel auth login`, one per server, in `<data dir>/credentials.json`
 * readable by its owner only. Kept apart from the context file, which holds no secret.
 */
export interface StoredCredential {
  token: string;
  keyId: string | null;
  userId: string | null;
  savedAt: string;
}

interface CredentialsFile { version: 1; servers: Record<string, StoredCredential> }

function read(file: string): CredentialsFile {
  if (!existsSync(file)) return { version: 1, servers: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<CredentialsFile>;
    return { version: 1, servers: parsed.servers && typeof parsed.servers === 'object' ? parsed.servers : {} };
  } catch (error) {
    throw new CliError('invalid_credentials', `Cannot read ${file}: ${(error as Error).message}`);
  }
}

/** The server's key, or null: by its API base without a trailing slash. */
export function storedCredential(file: string, apiBase: string): StoredCredential | null {
  const found = read(file).servers[apiBase.replace(/\/+$/, '')];
  return found && typeof found.token === 'string' ? found : null;
}

export function saveCredential(file: string, apiBase: string, credential: StoredCredential): void {
  const content = read(file);
  content.servers[apiBase.replace(/\/+$/, '')] = credential;
  write(file, content);
}

/** Forgets the server's key; true when there was one. */
export function forgetCredential(file: string, apiBase: string): boolean {
  const content = read(file);
  const key = apiBase.replace(/\/+$/, '');
  if (!content.servers[key]) return false;
  delete content.servers[key];
  write(file, content);
  return true;
}

function write(file: string, content: CredentialsFile): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}
