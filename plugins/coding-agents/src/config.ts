import { PluginError } from '@keel/sdk/plugin';
import { isObject } from './context.ts';
import { driverFor } from './tools/index.ts';
import type { LocalConfig, ToolDriver } from './tools/driver.ts';

/**
 * The local adapters' adapterConfig (docs/api/runtime.md, "Local adapters"): validated on agent
 * create, hire and update, every refusal a 422 `invalid_adapter_config` naming the field, and
 * stored normalised with the defaults filled in (the tool's executable as `command`, its
 * default model), so the command the kernel runs is always the board-approved one. Other keys
 * (env, desired skills, instruction settings) are kept as they are: the kernel checks `env`.
 * `modelProvider` names a model provider of the company (checked when a run asks the model
 * gateway for it: an unknown name serves nothing) or is "none".
 */
export const DEFAULT_TIMEOUT_SEC = 3_600;
export const DEFAULT_GRACE_SEC = 15;
const MAX_TIMEOUT_SEC = 7 * 24 * 3_600;

function invalid(field: string, message: string): PluginError {
  const path = `adapterConfig.${field}`;
  return new PluginError(422, 'invalid_adapter_config', `${path} ${message}`, { path });
}

/** A string without control characters, or null when absent. */
function text(config: Record<string, unknown>, field: string, max: number): string | null {
  const value = config[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.trim() === '' || value.length > max || /[\x00-\x1f\x7f]/.test(value)) {
    throw invalid(field, `must be a non-empty string of at most ${max} characters without control characters`);
  }
  return value;
}

function integer(config: Record<string, unknown>, field: string, min: number, max: number, fallback: number | null): number | null {
  const value = config[field];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw invalid(field, `must be an integer from ${min} to ${max}`);
  return value;
}

/**
 * extraArgs: only flags of the tool's allow-list, each with its value when it takes one. Never
 * the prompt (a bare argument), a credential, or a flag that changes where output or sessions
 * go: those are the adapter's to set.
 */
function extraArgs(driver: ToolDriver, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > 50 || value.some((arg) => typeof arg !== 'string' || arg.length > 1_000 || arg.includes('\0'))) {
    throw invalid('extraArgs', 'must be an array of at most 50 strings');
  }
  const args = value as string[];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), true] : [arg, false];
    const allowed = driver.allowedExtraArgs.find((entry) => entry.flag === flag);
    if (!allowed) {
      const accepted = driver.allowedExtraArgs.map((entry) => entry.flag).join(', ') || 'none';
      throw invalid(`extraArgs.${index}`, `${JSON.stringify(arg.slice(0, 100))} is not a flag ${driver.displayName} runs may be given (accepted: ${accepted}); the prompt, credentials, output and session flags are the adapter's`);
    }
    if (allowed.takesValue && !inline) {
      if (index + 1 >= args.length) throw invalid(`extraArgs.${index}`, `${flag} needs a value`);
      index += 1;
    } else if (!allowed.takesValue && inline) {
      throw invalid(`extraArgs.${index}`, `${flag} takes no value`);
    }
  }
  return args;
}

/** The configuration as stored: validated, defaults filled in, other keys kept. */
export function normaliseConfig(driver: ToolDriver, config: Record<string, unknown>): Record<string, unknown> {
  const command = text(config, 'command', 4_096) ?? driver.executable;
  const cwd = text(config, 'cwd', 4_096);
  if (cwd !== null && !cwd.startsWith('/')) throw invalid('cwd', 'must be an absolute path');
  const model = text(config, 'model', 200) ?? driver.defaultModel;
  const effort = text(config, 'effort', 50);
  if (effort !== null && !driver.efforts?.includes(effort)) {
    throw invalid('effort', driver.efforts ? `must be one of ${driver.efforts.join(', ')}` : `is not a setting of ${driver.displayName}`);
  }
  const maxTurns = integer(config, 'maxTurns', 1, 1_000, null);
  if (maxTurns !== null && !driver.supportsMaxTurns) throw invalid('maxTurns', `is not a setting of ${driver.displayName}`);
  if (config.toolSandbox !== undefined && typeof config.toolSandbox !== 'boolean') throw invalid('toolSandbox', 'must be a boolean');
  if (config.env !== undefined && !isObject(config.env)) throw invalid('env', 'must be an object of variable names to values');
  const modelProvider = text(config, 'modelProvider', 100);
  return {
    ...config, command, cwd, model, modelProvider, extraArgs: extraArgs(driver, config.extraArgs), effort, maxTurns, toolSandbox: config.toolSandbox === true,
    timeoutSec: integer(config, 'timeoutSec', 0, MAX_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC), graceSec: integer(config, 'graceSec', 0, 300, DEFAULT_GRACE_SEC),
  };
}

/** The stored configuration as a run reads it (validated when it was written). */
export function localConfig(driver: ToolDriver, config: Record<string, unknown>): LocalConfig {
  const string = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
  return {
    command: string(config.command) ?? driver.executable,
    cwd: string(config.cwd),
    model: string(config.model) ?? driver.defaultModel,
    extraArgs: Array.isArray(config.extraArgs) ? config.extraArgs.filter((arg): arg is string => typeof arg === 'string') : [],
    effort: string(config.effort),
    maxTurns: typeof config.maxTurns === 'number' ? config.maxTurns : null,
    toolSandbox: config.toolSandbox === true,
    timeoutSec: typeof config.timeoutSec === 'number' ? config.timeoutSec : DEFAULT_TIMEOUT_SEC,
    graceSec: typeof config.graceSec === 'number' ? config.graceSec : DEFAULT_GRACE_SEC,
    env: isObject(config.env) ? config.env : {},
    modelProvider: string(config.modelProvider),
    gateway: null,
  };
}

/** The kernel point `agent.adapter-config` for the local adapter types. */
export async function adapterConfigService(input: unknown): Promise<{ adapterConfig: Record<string, unknown>; secretFields: string[] }> {
  const { adapterType, adapterConfig } = input as { adapterType: string; adapterConfig: Record<string, unknown> };
  const driver = driverFor(adapterType);
  if (!driver) throw new PluginError(422, 'invalid_adapter_config', `This instance has no driver for the adapter ${adapterType}`, { path: 'adapterType' });
  return { adapterConfig: normaliseConfig(driver, adapterConfig), secretFields: [] };
}
