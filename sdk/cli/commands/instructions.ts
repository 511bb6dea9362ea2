import { isAbsolute } from 'node:path';
import type { KeelClient } from '../../client/index.ts';
import { CliError, clientFor, emit, emitRecord, type GlobalOptions } from '../output.ts';
import { agentId, path } from './agent-ref.ts';

/**
 * Where an agent's instructions live: keys of its `adapterConfig` (`instructionsFilePath` and
 * the bundle keys, which a PATCH replacing the adapter configuration keeps; docs/api/agents.md),
 * written through `PATCH /api/agents/{agentId}`, which merges `adapterConfig` per key.
 */
type Options = GlobalOptions & { path?: string; adapterConfigKey?: string; mode?: string; rootPath?: string; entryFile?: string; agentsMdPath?: string };

const BUNDLE_KEYS = ['instructionsFilePath', 'instructionsBundleMode', 'instructionsRootPath', 'instructionsEntryFile', 'agentsMdPath'] as const;

interface Configuration { agentId: string; adapterType: string; adapterConfig: Record<string, unknown> | null }

async function configurationOf(client: KeelClient, ref: string, options: Options): Promise<Configuration> {
  return client.get<Configuration>(path`/api/agents/${await agentId(client, ref, options)}/configuration`);
}

/** A relative path is relative to the agent's working directory, so it needs one. */
function checkPath(field: string, value: string, config: Configuration): void {
  if (!isAbsolute(value) && typeof config.adapterConfig?.cwd !== 'string') {
    throw new CliError('usage', `${field} ${JSON.stringify(value)} is relative, and the agent's adapterConfig has no cwd to resolve it against: give an absolute path or set adapterConfig.cwd first`);
  }
}

export async function instructionsBundleCommand(ref: string, options: Options): Promise<void> {
  const config = await configurationOf(clientFor(options), ref, options);
  const adapterConfig = config.adapterConfig ?? {};
  emitRecord(options, { agentId: config.agentId, adapterType: config.adapterType, cwd: adapterConfig.cwd ?? null, ...Object.fromEntries(BUNDLE_KEYS.map((key) => [key, adapterConfig[key] ?? null])) });
}

/**
 * `instructions-path:update --path p`: the instructions file. The key is `instructionsFilePath`;
 * a process adapter has no such convention, so its key must be named (`--adapter-config-key`).
 */
export async function instructionsPathUpdateCommand(ref: string, options: Options): Promise<void> {
  if (!options.path) throw new CliError('usage', 'instructions-path:update needs --path <path>');
  const client = clientFor(options);
  const config = await configurationOf(client, ref, options);
  const key = options.adapterConfigKey ?? (config.adapterType === 'process' ? undefined : 'instructionsFilePath');
  if (!key) throw new CliError('usage', 'A process adapter has no standard instructions key: name the adapterConfig key that holds the path with --adapter-config-key <key>');
  checkPath('--path', options.path, config);
  const agent = await client.patch<Record<string, any>>(path`/api/agents/${config.agentId}`, { adapterConfig: { [key]: options.path } });
  emit(options, `Instructions of ${agent.name}: adapterConfig.${key} = ${options.path}`, agent);
}

export async function instructionsBundleUpdateCommand(ref: string, options: Options): Promise<void> {
  const changes: Record<string, string> = {};
  if (options.mode !== undefined) changes.instructionsBundleMode = options.mode;
  if (options.rootPath !== undefined) changes.instructionsRootPath = options.rootPath;
  if (options.entryFile !== undefined) changes.instructionsEntryFile = options.entryFile;
  if (options.agentsMdPath !== undefined) changes.agentsMdPath = options.agentsMdPath;
  if (!Object.keys(changes).length) throw new CliError('usage', 'Nothing to update: pass --mode, --root-path, --entry-file or --agents-md-path');
  const client = clientFor(options);
  const config = await configurationOf(client, ref, options);
  if (changes.instructionsRootPath) checkPath('--root-path', changes.instructionsRootPath, config);
  if (changes.agentsMdPath) checkPath('--agents-md-path', changes.agentsMdPath, config);
  const agent = await client.patch<Record<string, any>>(path`/api/agents/${config.agentId}`, { adapterConfig: changes });
  emit(options, `Instruction bundle of ${agent.name}: ${Object.entries(changes).map(([k, v]) => `${k} = ${v}`).join(', ')}`, agent);
}
