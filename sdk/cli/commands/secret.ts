import { readFileSync } from 'node:fs';
import { CliError, clientFor, companyIdFor, emit, emitList, type GlobalOptions, userPath } from '../output.ts';
import { path } from './agent-ref.ts';

/**
 * Secrets (docs/api/secrets.md). A value never comes from a flag (shell history and the
 * process list would keep it): it is read from `--value-file <path>` or from stdin, with one
 * trailing newline dropped unless `--keep-newline`. Answers are metadata; values are never printed.
 */
type Options = GlobalOptions & { name?: string; description?: string; provider?: string; externalRef?: string; valueFile?: string; keepNewline?: boolean; yes?: boolean };

const COLUMNS = ['id', 'name', 'provider', 'latestVersion', 'description', 'updatedAt'];

/**
 * A secret value from `valueFile` (`-`: stdin) or stdin. `what` names it in refusals, `usage`
 * says how to pass it; a terminal on stdin is refused, since what is typed there would be echoed.
 */
export async function readSecretValue(options: { valueFile?: string; keepNewline?: boolean }, what = 'The secret value',
  usage = 'pipe it in (printf %s "$VALUE" | keel secret ...) or pass --value-file <path>'): Promise<string> {
  let raw: string;
  if (options.valueFile && options.valueFile !== '-') {
    raw = readFileSync(userPath(options.valueFile), 'utf8');
  } else {
    if (process.stdin.isTTY) throw new CliError('value_required', `${what} is read from stdin or a file, never from a flag: ${usage}`);
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    raw = Buffer.concat(chunks).toString('utf8');
  }
  const value = options.keepNewline ? raw : raw.replace(/\r?\n$/, '');
  if (!value) throw new CliError('value_required', `${what} is empty`);
  return value;
}

export async function listCommand(options: Options): Promise<void> {
  const secrets = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/secrets`);
  emitList(options, secrets, COLUMNS, 'No secrets');
}

export async function providersCommand(options: Options): Promise<void> {
  const providers = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/secret-providers`);
  emitList(options, providers, ['id', 'label', 'requiresExternalRef', 'configured'], 'No providers');
}

export async function createCommand(options: Options): Promise<void> {
  if (!options.name) throw new CliError('usage', 'secret create needs --name <name>');
  const companyId = companyIdFor(options);
  const value = await readSecretValue(options);
  const body: Record<string, unknown> = { name: options.name, value };
  if (options.description !== undefined) body.description = options.description;
  if (options.provider !== undefined) body.provider = options.provider;
  if (options.externalRef !== undefined) body.externalRef = options.externalRef;
  const secret = await clientFor(options).post<Record<string, any>>(path`/api/companies/${companyId}/secrets`, body);
  emit(options, `Created secret ${secret.name} (${secret.id}), version ${secret.latestVersion}`, secret);
}

export async function rotateCommand(id: string, options: Options): Promise<void> {
  const value = await readSecretValue(options);
  const secret = await clientFor(options).post<Record<string, any>>(path`/api/secrets/${id}/rotate`, { value, ...(options.externalRef !== undefined ? { externalRef: options.externalRef } : {}) });
  emit(options, `Rotated secret ${secret.name}: version ${secret.latestVersion}`, secret);
}

export async function updateCommand(id: string, options: Options): Promise<void> {
  const body: Record<string, unknown> = {};
  if (options.name !== undefined) body.name = options.name;
  if (options.description !== undefined) body.description = options.description;
  if (options.externalRef !== undefined) body.externalRef = options.externalRef;
  if (!Object.keys(body).length) throw new CliError('usage', 'Nothing to update: pass --name, --description or --external-ref (the value changes only with secret rotate)');
  const secret = await clientFor(options).patch<Record<string, any>>(path`/api/secrets/${id}`, body);
  emit(options, `Updated secret ${secret.name}`, secret);
}

export async function deleteCommand(id: string, options: Options): Promise<void> {
  if (!options.yes) throw new CliError('confirmation_required', `Deleting a secret removes every version and grant for good; run again with --yes to delete ${id}`);
  const answer = await clientFor(options).delete(path`/api/secrets/${id}`);
  emit(options, `Deleted secret ${id}`, answer);
}
