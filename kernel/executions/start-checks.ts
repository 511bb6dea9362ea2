import { isAbsolute, normalize, sep } from 'node:path';
import type { Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { unapprovedConfig } from '../tenancy/agent-config-revisions.ts';

/**
 * Who may start what. A plugin names a run; what runs comes from the run's agent's adapter
 * configuration, and only when a board actor wrote that configuration or approved it:
 * - the latest configuration revision that changed adapterType or adapterConfig was written
 *   by a user (the board: create, patch, rollback), or
 * - it was written by an agent (a hire) or by no actor (a company import), and a board actor
 *   approved the agent's hire after that revision, or approved it on the agent (a revision of
 *   source `approval`, agent-transitions.ts).
 * An agent that changed its own adapter configuration (or another agent's) cannot run until the
 * board writes or approves it again. Revisions of source `instructions` (agents.instructions) are
 * passed over: they can only write instruction keys, never what runs. The agent must be runnable (not paused or held, terminated
 * or pending approval) and its company active; both are checked again just before the start.
 */
const STOPPED_AGENT = new Set(['paused', 'terminated', 'pending_approval']);

export function assertRunnable(agent: { status: string }, company: { status: string }): void {
  if (STOPPED_AGENT.has(agent.status)) {
    throw new KeelError(409, 'agent_not_runnable', `The agent is ${agent.status}; it cannot be run`, { details: { status: agent.status } });
  }
  if (company.status !== 'active') {
    throw new KeelError(409, 'company_not_active', `The agent's company is ${company.status}; its agents cannot be run`, { details: { status: company.status } });
  }
}

export async function assertBoardApprovedConfig(db: Queryable, agentId: string): Promise<void> {
  const why = await unapprovedConfig(db, agentId);
  if (why) throw new KeelError(409, 'adapter_config_unapproved', `The agent's adapter configuration cannot run: ${why}`);
}

export interface ProcessConfig { command: string; args: string[]; cwd: string | null; timeoutSec: number | null; graceSec: number }

export const DEFAULT_GRACE_SEC = 15;

/** The `process` adapter's configuration, or 409 adapter_config_invalid naming the field. */
export function processConfig(adapterConfig: unknown): ProcessConfig {
  const config = (adapterConfig && typeof adapterConfig === 'object' ? adapterConfig : {}) as Record<string, unknown>;
  const invalid = (field: string, what: string) => new KeelError(409, 'adapter_config_invalid', `adapterConfig.${field} ${what}`, { details: { field } });
  if (typeof config.command !== 'string' || config.command.trim() === '') throw invalid('command', 'must be a command to run');
  const args = config.args ?? [];
  if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string')) throw invalid('args', 'must be an array of strings');
  if (config.cwd !== undefined && config.cwd !== null && (typeof config.cwd !== 'string' || !isAbsolute(config.cwd))) throw invalid('cwd', 'must be an absolute path');
  const seconds = (field: string, value: unknown): number | null => {
    if (value === undefined || value === null) return null;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 7 * 24 * 3600) throw invalid(field, 'must be a number of seconds');
    return value;
  };
  const timeoutSec = seconds('timeoutSec', config.timeoutSec);
  return {
    command: config.command, args: args as string[], cwd: (config.cwd as string | undefined) ?? null,
    timeoutSec: timeoutSec === 0 ? null : timeoutSec, graceSec: seconds('graceSec', config.graceSec) ?? DEFAULT_GRACE_SEC,
  };
}

/** A file's path inside the working directory: relative, with no `..` segment. */
export function safeRelativePath(path: string): string {
  const normalised = normalize(path);
  if (isAbsolute(path) || normalised.split(sep).includes('..') || normalised === '.' || path.includes('\0')) {
    throw new KeelError(400, 'invalid_arguments', `files: ${JSON.stringify(path.slice(0, 100))} must be a relative path inside the working directory`);
  }
  return normalised;
}

/** Names the canonical run variables take; a plugin's or the configuration's value for them is replaced. */
export const CANONICAL_NAMES = ['SERVICE_API_URL', 'SERVICE_API_KEY', 'SERVICE_LLM_URL', 'SERVICE_COMPANY_ID', 'SERVICE_AGENT_ID', 'SERVICE_RUN_ID'] as const;

/**
 * The environment of an agent process, from scratch: PATH, HOME, LANG and TMPDIR only (nothing
 * of the server's environment), then the agent's resolved environment (plain values and
 * secrets), then the plugin's extras, then a tool launch's token variables (the run token under
 * the tool's API-key name), then the canonical run values, which win.
 */
export function processEnvironment(input: {
  home: string; resolved: Record<string, string>; extras: Record<string, string>;
  /** The run's values (a probe, outside any run, has no token and no run id). */
  canonical: Partial<Record<(typeof CANONICAL_NAMES)[number], string>>;
  /** TMPDIR when it is not the home (a tool launch's home is the agent's persistent one; its temporary files stay in the run's folder). */
  tmp?: string;
  /** A tool launch's home folders and tool variables: defaults the agent's configured env may override. */
  defaults?: Record<string, string>;
  /** A tool launch's token variables, each with the run token: over the configured and the plugin's values. */
  tokens?: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin', HOME: input.home, LANG: 'C.UTF-8', TMPDIR: input.tmp ?? input.home,
  };
  const serviceExtras = Object.fromEntries(Object.entries(input.extras).filter(([name]) => name.startsWith('SERVICE_')));
  const toolDefaults = { ...input.defaults, ...Object.fromEntries(Object.entries(input.extras).filter(([name]) => !name.startsWith('SERVICE_'))) };
  for (const source of [toolDefaults, input.resolved, serviceExtras, input.tokens ?? {}]) {
    for (const [name, value] of Object.entries(source)) {
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !value.includes('\0')) env[name] = value;
    }
  }
  return { ...env, ...input.canonical };
}

/**
 * A plugin adds only `SERVICE_*` variables: anything else (PATH, LD_PRELOAD, NODE_OPTIONS, ...)
 * could change what the board-configured command runs.
 */
export function assertPluginExtras(extras: Record<string, string>): void {
  for (const [name, value] of Object.entries(extras)) {
    if (!/^SERVICE_[A-Z0-9_]{1,100}$/.test(name) || value.includes('\0')) {
      throw new KeelError(400, 'invalid_arguments', `env: ${JSON.stringify(name.slice(0, 100))} is not a SERVICE_* variable; a plugin may add only SERVICE_* variables to an agent's environment`);
    }
  }
}
