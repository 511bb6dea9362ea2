import { readFile } from 'node:fs/promises';
import { withQuery, type KeelClient } from '../../client/index.ts';
import { CliError, clientFor, emit, emitRecord, type GlobalOptions } from '../output.ts';
import { agentId, path } from './agent-ref.ts';

/**
 * An agent's instructions, through the instruction routes (docs/api/runtime.md "Instructions"):
 * a managed bundle of files Keel keeps, or an external path recorded in the adapter
 * configuration. The server checks paths, keys and the cwd rule; the commands only shape input.
 */
type Options = GlobalOptions & {
  path?: string; adapterConfigKey?: string; mode?: string; entryFile?: string;
  content?: string; contentFile?: string; clearLegacyPromptTemplate?: boolean;
};

interface Bundle { agentId: string; mode: string; entryFile: string; adapterConfigKey: string | null; path: string | null; files: Array<{ path: string; size: number }> }

const bundlePath = async (client: KeelClient, ref: string, options: Options) => path`/api/agents/${await agentId(client, ref, options)}/instructions-bundle`;

function describe(bundle: Bundle): string {
  return bundle.mode === 'external'
    ? `Instructions of ${bundle.agentId}: external, adapterConfig.${bundle.adapterConfigKey} = ${bundle.path}`
    : `Instructions of ${bundle.agentId}: managed bundle, entry ${bundle.entryFile}, ${bundle.files.length} file${bundle.files.length === 1 ? '' : 's'}`;
}

export async function instructionsBundleCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  emitRecord(options, await client.get<Record<string, unknown>>(await bundlePath(client, ref, options)));
}

/** `instructions-path:update --path p [--adapter-config-key k]`: an external instructions file. */
export async function instructionsPathUpdateCommand(ref: string, options: Options): Promise<void> {
  if (options.path === undefined) throw new CliError('usage', 'instructions-path:update needs --path <path>');
  const client = clientFor(options);
  const body = { path: options.path, ...(options.adapterConfigKey ? { adapterConfigKey: options.adapterConfigKey } : {}) };
  const bundle = await client.patch<Bundle>(path`/api/agents/${await agentId(client, ref, options)}/instructions-path`, body);
  emit(options, describe(bundle), bundle);
}

/** `instructions-bundle:update [--mode managed|external] [--entry-file f] [--path p] [--adapter-config-key k]`. */
export async function instructionsBundleUpdateCommand(ref: string, options: Options): Promise<void> {
  const body: Record<string, string> = {};
  if (options.mode !== undefined) body.mode = options.mode;
  if (options.entryFile !== undefined) body.entryFile = options.entryFile;
  if (options.path !== undefined) body.path = options.path;
  if (options.adapterConfigKey !== undefined) body.adapterConfigKey = options.adapterConfigKey;
  if (!Object.keys(body).length) throw new CliError('usage', 'Nothing to update: pass --mode, --entry-file, --path or --adapter-config-key');
  const client = clientFor(options);
  const bundle = await client.patch<Bundle>(await bundlePath(client, ref, options), body);
  emit(options, describe(bundle), bundle);
}

function filePath(options: Options, command: string): string {
  if (!options.path) throw new CliError('usage', `${command} needs --path <path of the file in the bundle>`);
  return options.path;
}

export async function instructionsFileGetCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const file = await client.get<{ content: string }>(`${await bundlePath(client, ref, options)}/file`, { path: filePath(options, 'instructions-file:get') });
  // Human output is the file itself, so that it can be redirected.
  emit(options, file.content, file);
}

/** `instructions-file:put --path p (--content text | --content-file f) [--clear-legacy-prompt-template]`. */
export async function instructionsFilePutCommand(ref: string, options: Options): Promise<void> {
  const file = filePath(options, 'instructions-file:put');
  if ((options.content === undefined) === (options.contentFile === undefined)) {
    throw new CliError('usage', 'instructions-file:put needs exactly one of --content <text> or --content-file <file>');
  }
  const content = options.content ?? await readFile(options.contentFile!, 'utf8');
  const client = clientFor(options);
  const agent = await agentId(client, ref, options);
  const written = await client.put<Record<string, unknown>>(path`/api/agents/${agent}/instructions-bundle/file`, { content, path: file });
  if (options.clearLegacyPromptTemplate) {
    // A prompt template kept in the adapter configuration would compete with the bundle's entry file.
    await client.patch(path`/api/agents/${agent}`, { adapterConfig: { promptTemplate: null } });
  }
  emit(options, `Wrote ${file} (${Buffer.byteLength(content)} bytes) to the instructions of ${agent}`, written);
}

export async function instructionsFileDeleteCommand(ref: string, options: Options): Promise<void> {
  const file = filePath(options, 'instructions-file:delete');
  const client = clientFor(options);
  const answer = await client.delete<Record<string, unknown>>(withQuery(`${await bundlePath(client, ref, options)}/file`, { path: file }));
  emit(options, `Deleted ${file} from the instructions of ${ref}`, answer);
}
