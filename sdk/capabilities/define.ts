import type { PluginManifest } from '../plugin/manifest.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * Where a capability method is served: in the plugin's worker process (`worker`), by the
 * kernel through the broker (`kernel`), or by a `keel_bridge` function in the plugin's own
 * transaction (`database`). A capability without methods is a contribution point the host
 * enforces when it mounts the plugin (`host`).
 */
export type ServedBy = 'worker' | 'kernel' | 'database';

export interface MethodSpec {
  servedBy: ServedBy;
  /** The positional arguments, in order; an omitted optional argument arrives as null. */
  args: JsonSchema[];
  /** How many leading arguments are required. */
  required: number;
  result: JsonSchema;
  /** `company`: the method reaches company data and is refused to a call that serves no company. */
  scope: 'company' | 'instance';
  /**
   * A tighter bound than the host's on the characters of the arguments, with its own refusal:
   * checked in the isolate before the arguments are copied (sdk/plugin/wire-budget.ts).
   */
  argumentsBound?: ArgumentsBound;
}

export interface ArgumentsBound { chars: number; status: number; code: string; message: string }

/**
 * One capability, declared once: everything else (the manifest's list of ids, the grant
 * checks of the worker, the broker and the test host, the plugin's `ctx`, the manifest rules,
 * the generated allowed and denied tests) is derived from these declarations.
 * `Ctx` is the part of the plugin's `ctx` the capability adds (a phantom type).
 */
export interface CapabilitySpec<Id extends string = string, Ctx = Record<never, never>> {
  id: Id;
  /** Shown to the operator when the plugin asks for it (the plugin adds its own reason). */
  summary: string;
  /** The `ctx` members and methods it grants. */
  members: Record<string, Record<string, MethodSpec>>;
  /** Manifest fields that need this capability: their paths when present. */
  requiredBy?(manifest: PluginManifest): string[];
  /** Other capabilities that serve those fields as well (any one of them is enough). */
  satisfiedAlsoBy?: readonly string[];
  /** The fix the denial names, after "declare it under capabilities in plugin.json and grant it". */
  hint?: string;
  readonly __ctx?: Ctx;
}

export function defineCapability<Ctx = Record<never, never>>() {
  return <const Id extends string>(spec: Omit<CapabilitySpec<Id, Ctx>, '__ctx'>): CapabilitySpec<Id, Ctx> => spec as CapabilitySpec<Id, Ctx>;
}

/** A method declaration: `method('kernel', [schemas...], result, { required, scope, argumentsBound })`. */
export function method(servedBy: ServedBy, args: JsonSchema[], result: JsonSchema, options: { required?: number; scope?: 'company' | 'instance'; argumentsBound?: ArgumentsBound } = {}): MethodSpec {
  const spec: MethodSpec = { servedBy, args, result, required: options.required ?? args.length, scope: options.scope ?? (servedBy === 'kernel' || servedBy === 'database' ? 'company' : 'instance') };
  if (options.argumentsBound) spec.argumentsBound = options.argumentsBound;
  return spec;
}

/** Present (non-empty) manifest fields, as paths. */
export function present(manifest: PluginManifest, ...paths: string[]): string[] {
  return paths.filter((path) => {
    let value: unknown = manifest;
    for (const part of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
    return value !== undefined && value !== null && (!Array.isArray(value) || value.length > 0);
  });
}
