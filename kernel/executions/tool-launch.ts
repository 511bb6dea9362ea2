import { refusedRunVariable } from '../../sdk/capabilities/run-variable-names.ts';
import { KeelError } from '../http/errors.ts';
import { processConfig, safeRelativePath, type ProcessConfig } from './start-checks.ts';

/**
 * A tool launch: an agent of an adapter type a plugin contributes (a coding-agent tool) run as
 * a process. What runs is still the board's: the executable is the agent's board-approved
 * `adapterConfig.command` (the contributing plugin's configuration point stores the tool's
 * default there), with its cwd, env, timeoutSec and graceSec; the plugin gives the arguments (its
 * adapter's whole job is to turn a wake into them), the standard input, tool variables and home
 * folders. A plugin that does not contribute the agent's type gets nothing of this.
 */
export interface ToolLaunch {
  stdin: Buffer | null;
  /** Variables given the run token (tokenVariables), over everything else but the canonical ones. */
  tokenVariables: string[];
  /** Configured variables withheld from the process (withholdVariables): never revealed, never passed. */
  withhold: Set<string>;
  home: { variables: Record<string, string>; replace: string[]; files: Array<{ path: string; content: Buffer }>; workdir: string | null } | null;
  retry: { args: string[]; needles: string[] } | null;
}

/** The process configuration of a tool launch: the configured command and deadlines, the plugin's arguments. */
export function toolProcessConfig(adapterConfig: unknown, args: string[]): ProcessConfig {
  const config = processConfig({ ...(adapterConfig as Record<string, unknown> | null ?? {}), args: [] });
  assertArguments(args, 'args');
  return { ...config, args };
}

function assertArguments(args: string[], field: string): void {
  if (args.some((arg) => arg.includes('\0'))) throw new KeelError(400, 'invalid_arguments', `${field}: an argument holds a NUL character`);
}

/**
 * Variables a plugin adds to a tool launch: `SERVICE_*` as for any process (the canonical ones
 * still win), and tool variables (DISABLE_AUTOUPDATER=1, ...) under the run-variable rule, which
 * keeps out every name that could change what the configured command runs (PATH, LD_*,
 * NODE_OPTIONS, HOME, ...). A plain process run keeps to SERVICE_* (assertPluginExtras).
 */
export function assertToolExtras(extras: Record<string, string>): void {
  for (const [name, value] of Object.entries(extras)) {
    const why = name.startsWith('SERVICE_') && /^SERVICE_[A-Z0-9_]{1,100}$/.test(name) ? null : refusedRunVariable(name);
    if (why || value.includes('\0')) {
      throw new KeelError(400, 'invalid_arguments', `env: ${JSON.stringify(name.slice(0, 100))} ${why ?? 'holds a NUL character'}`);
    }
  }
}

/** The home folders' variables: names under the run-variable rule, values relative folders. */
export function homeVariables(variables: Record<string, string> | undefined): Record<string, string> {
  const checked: Record<string, string> = {};
  for (const [name, path] of Object.entries(variables ?? {})) {
    const why = refusedRunVariable(name);
    if (why) throw new KeelError(400, 'invalid_arguments', `home.variables: ${JSON.stringify(name.slice(0, 100))} ${why}`);
    checked[name] = safeRelativePath(path);
  }
  return checked;
}

/**
 * A tool launch's token variables: names under the run-variable rule (no PATH, LD_*, HOME, ...),
 * and never a canonical SERVICE_* name (those keep their own values).
 */
export function tokenVariables(names: string[] | undefined): string[] {
  for (const name of names ?? []) {
    const why = name.startsWith('SERVICE_') ? 'is a SERVICE_* variable; the run token is SERVICE_API_KEY already' : refusedRunVariable(name);
    if (why) throw new KeelError(400, 'invalid_arguments', `tokenVariables: ${JSON.stringify(name.slice(0, 100))} ${why}`);
  }
  return [...(names ?? [])];
}

export function prepareToolLaunch(input: {
  args?: string[]; stdin?: string; tokenVariables?: string[]; withholdVariables?: string[];
  home?: { variables?: Record<string, string>; replace?: string[]; files?: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>; workdir?: string };
  retryOnce?: { args: string[]; ifOutputIncludes: string[] };
}): ToolLaunch {
  if (input.retryOnce) assertArguments(input.retryOnce.args, 'retryOnce.args');
  return {
    stdin: input.stdin === undefined ? null : Buffer.from(input.stdin, 'utf8'),
    tokenVariables: tokenVariables(input.tokenVariables),
    withhold: new Set(input.withholdVariables ?? []),
    home: input.home ? {
      variables: homeVariables(input.home.variables),
      replace: (input.home.replace ?? []).map(safeRelativePath),
      files: (input.home.files ?? []).map((file) => ({ path: safeRelativePath(file.path), content: Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8') })),
      workdir: input.home.workdir === undefined ? null : safeRelativePath(input.home.workdir),
    } : null,
    retry: input.retryOnce ? { args: input.retryOnce.args, needles: input.retryOnce.ifOutputIncludes } : null,
  };
}

/** The fields a plain process start may not carry: they belong to tool launches. */
export function assertNoToolFields(input: Record<string, unknown>): void {
  for (const field of ['args', 'stdin', 'home', 'retryOnce', 'tokenVariables', 'withholdVariables']) {
    if (input[field] !== undefined) {
      throw new KeelError(400, 'invalid_arguments', `${field}: only for an agent whose adapter type this plugin contributes; a process agent runs its configuration's command and arguments`);
    }
  }
}
