import { readFile, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { PLUGIN_EVENTS } from '../events/plugin-events.ts';

/**
 * The module `keel plugin build` writes beside a plugin's entry from its plugin.json: the
 * plugin's `Context` (its `ctx` type) and a `definePlugin` bound to the capabilities the
 * manifest declares. The code is then typed from the manifest, with no list of its own, and
 * the bundle carries the list it was typed against: the plugin runtime refuses every call
 * (500 capability_not_granted) when plugin.json no longer declares one of them, so code typed
 * against an older manifest never runs with a `ctx` member missing.
 */
export const CONTEXT_MODULE = 'plugin.gen.ts';

/** Where the module of a plugin goes: beside its entry (`src/index.ts` gives `src/plugin.gen.ts`). */
export function contextModulePath(manifest: { entry: string }): string {
  return posix.join(posix.dirname(manifest.entry.replaceAll('\\', '/')), CONTEXT_MODULE);
}

/** What the module is written from: the manifest's capabilities, its own events with their schemas, and its jobs. */
export interface ContextManifest {
  capabilities: ReadonlyArray<{ id: string }>;
  publishedEvents?: ReadonlyArray<{ name: string; schema: unknown }>;
  jobs?: ReadonlyArray<{ key: string; payloadSchema?: unknown }>;
  folders?: ReadonlyArray<{ onChange?: { job: string } }>;
}

const literal = (id: string) => (/^[a-z0-9._-]+$/.test(id) ? `'${id}'` : JSON.stringify(id));
/** Events sdk/events declares (work's, costs'): typed by their declaration already, so not again here. */
const SDK_DECLARED: ReadonlySet<string> = new Set(PLUGIN_EVENTS.map((event) => event.name));

/**
 * The module's text for a manifest: one line per declared capability, in plugin.json's order;
 * for a plugin that publishes events of its own, their payload types derived from the schemas
 * under publishedEvents (a JSON schema is also a TypeScript type literal), added to
 * ManifestEventPayloads: `ctx.events.publish(name, payload)` and the `events` handler of each
 * name are then typed from plugin.json, with no cast. The plugin's jobs likewise, as `Jobs`:
 * each job's payload type derived from its payloadSchema (null without one), and the folder
 * changes for a job a folder's onChange names; `ctx.jobs.enqueue(key, payload)` and the `jobs`
 * handler of each key are typed by them.
 */
export function contextModuleText(manifest: ContextManifest): string {
  const ids = [...new Set(manifest.capabilities.map((capability) => capability.id))];
  const list = ids.length ? `[\n${ids.map((id) => `  ${literal(id)},\n`).join('')}]` : '[]';
  const own = (manifest.publishedEvents ?? []).filter((event) => !SDK_DECLARED.has(event.name));
  const declaredJobs = manifest.jobs ?? [];
  const watched = new Set((manifest.folders ?? []).flatMap((folder) => (folder.onChange ? [folder.onChange.job] : [])));
  const jobLines = declaredJobs.map((job) => {
    const payload = job.payloadSchema === undefined ? 'null' : `PayloadOfSchema<${JSON.stringify(job.payloadSchema)}>`;
    return `  ${literal(job.key)}: { payload: ${payload}${watched.has(job.key) ? '; onChange: FolderChanges' : ''} };\n`;
  });
  const jobs = jobLines.length ? `{\n${jobLines.join('')}}` : '{}';
  const imports = [
    'definePluginWith', 'type BatchCall as BatchCallOf',
    ...(declaredJobs.some((job) => watched.has(job.key)) ? ['type FolderChanges'] : []),
    'type JobPayloadOf',
    ...(own.length > 0 || declaredJobs.some((job) => job.payloadSchema !== undefined) ? ['type PayloadOfSchema'] : []),
    'type PluginContext',
  ];
  const events = own.length === 0 ? '' : `
/** The payloads of the events plugin.json publishes, from their schemas: publish and subscribe are typed by them. */
declare module '@keel/sdk/plugin' {
  interface ManifestEventPayloads {
${own.map((event) => `    ${literal(event.name)}: PayloadOfSchema<${JSON.stringify(event.schema)}>;\n`).join('')}  }
}
`;
  return `// Written by \`keel plugin build\` from plugin.json; do not edit (the build writes it again).
import { ${imports.join(', ')} } from '@keel/sdk/plugin';

/** The capabilities plugin.json declares: \`ctx\` has their members, typed and present. */
export const capabilities = ${list} as const;

export type Capability = (typeof capabilities)[number];

/**
 * The jobs plugin.json declares, by key: \`payload\` is what \`ctx.jobs.enqueue(key, payload)\`
 * takes (the type of the job's payloadSchema; null for a job without one); \`onChange\`, for the
 * job a folder's onChange names, is what the host runs it with.
 */
export type Jobs = ${jobs};
/** What the handler of job \`Key\` receives: its payload, or null for a scheduled or operator-triggered run. */
export type JobPayload<Key extends keyof Jobs> = JobPayloadOf<Jobs[Key]>;

/** The \`ctx\` of every handler of this plugin. */
export type Context = PluginContext<Capability, Jobs>;
/** One call of a batched route, with its own \`ctx\`. */
export type BatchCall = BatchCallOf<Capability, Jobs>;

/** Declares this plugin (the default export of its entry): handlers get \`Context\`, jobs their payloads. */
export const definePlugin = definePluginWith<typeof capabilities, Jobs>(capabilities);
${events}`;
}

/**
 * Writes the module of the plugin in `root` when it differs from plugin.json (a build of an
 * unchanged manifest touches nothing, so a watcher is not woken). Answers its path.
 */
export async function writeContextModule(root: string, manifestText: string): Promise<string> {
  const manifest = JSON.parse(manifestText) as { entry: string } & ContextManifest;
  const path = join(root, contextModulePath(manifest));
  const text = contextModuleText(manifest);
  const current = await readFile(path, 'utf8').catch(() => null);
  if (current !== text) await writeFile(path, text);
  return path;
}
