/**
 * What a coding-agent tool's adapter knows about its tool: how to start one non-interactive,
 * unattended run of it (arguments, standard input, the folders of the agent's home it uses,
 * where its instructions and skills go), how to read its structured output (transcript, usage,
 * session, result), how to tell its failures apart, and how to test it. A driver is pure: it
 * builds values and reads lines; the plugin's core does everything with ctx.
 */
import { LOCAL_TOOLS } from '@keel/sdk/plugin';

/** The adapter configuration every local adapter shares, validated and normalised by config.ts. */
export interface LocalConfig {
  /** The executable; default: the driver's, looked up on PATH (/usr/local/bin:/usr/bin:/bin). */
  command: string;
  /** Absolute; null: the run's own folder. */
  cwd: string | null;
  /** Default: driver.defaultModel. */
  model: string | null;
  /** Checked against driver.allowedExtraArgs. */
  extraArgs: string[];
  /** Reasoning or effort level, one of driver.efforts. */
  effort: string | null;
  /** When driver.supportsMaxTurns. */
  maxTurns: number | null;
  /** Keep the tool's own sandbox (default false: unattended, Keel's isolation is the boundary). */
  toolSandbox: boolean;
  timeoutSec: number;
  graceSec: number;
  /** Plain values and secret references (the kernel resolves them; the plugin sees secrets masked). */
  env: Record<string, unknown>;
  /** A model provider of the company (its name) to serve the runs through Keel's model gateway, "none" for the tool's own credentials, null for the company's default. */
  modelProvider?: string | null;
  /** Set by the core for a run (or probe) the gateway serves: where the tool's model calls go. Null otherwise. */
  gateway?: GatewayTarget | null;
}

/** The kinds of model provider the gateway serves (the wire protocol a tool speaks). */
export type ProviderKind = 'anthropic' | 'openai' | 'gemini';

/** The provider that serves a run: the tool calls `baseUrl` (`${llmUrl}/<providerId>`) with the run token. */
export interface GatewayTarget { providerId: string; kind: ProviderKind; baseUrl: string }

/** What a run the gateway serves gets: tool variables (base URLs), the variables holding the run token, and configured ones withheld (provider keys, other base URLs). */
export interface GatewayRouting { env: Record<string, string>; tokenVariables: string[]; withholdVariables: string[] }

/** How a tool is pointed at Keel's model gateway (docs/api/local-adapters.md, "The model gateway"). */
export interface GatewaySupport {
  /** The kind of provider the tool speaks with this configuration, or null when it cannot be routed (its own providers). */
  kind(config: LocalConfig): ProviderKind | null;
  routing(target: GatewayTarget, config: LocalConfig): GatewayRouting;
}

export interface RunFile { path: string; content: string; encoding?: 'utf8' | 'base64' }

/** What the core hands a driver to build one launch. */
export interface LaunchInput {
  config: LocalConfig;
  /** The session to resume, or null for a fresh one. */
  sessionId: string | null;
  /** Goes on stdin, never in the arguments. */
  prompt: string;
  /** The agent's instructions bundle entry file (text), or null. */
  instructions: string | null;
  skills: Array<{ runtimeName: string; files: RunFile[] }>;
}

export interface Launch {
  args: string[];
  stdin: string;
  /** Tool variables (not secrets), e.g. DISABLE_AUTOUPDATER=1; the run-variable rule applies (no PATH, LD_*, NODE_OPTIONS, HOME, ...). */
  env: Record<string, string>;
  /** Folders of the agent's persistent home the tool uses, as variables: { CLAUDE_CONFIG_DIR: '.claude' }. HOME is the home itself. */
  homeVariables: Record<string, string>;
  /** Files written into the home before the start (instructions where the tool reads user-level instructions, skills where it discovers them). */
  homeFiles: RunFile[];
  /** Home folders emptied before homeFiles are written (the skills folder: skills no longer desired go). */
  homeReplace: string[];
  /** Files written into the working directory (relative paths). */
  files: RunFile[];
  /** Arguments for a fresh start when a resume is refused: the kernel retries once when the tool exits non-zero and a line contains one of the substrings. */
  retryFresh: { args: string[]; ifOutputIncludes: string[] } | null;
}

export type TranscriptEntry =
  | { kind: 'init'; sessionId?: string; model?: string; version?: string; tools?: string[] }
  | { kind: 'assistant'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'tool_call'; id?: string; name: string; input: unknown }
  | { kind: 'tool_result'; id?: string; output: string; isError?: boolean }
  | { kind: 'error'; message: string }
  | { kind: 'result'; text?: string | null; isError?: boolean; turns?: number; durationMs?: number }
  | { kind: 'system'; message: string }
  | { kind: 'log'; line: string };

export interface ToolUsage {
  provider: string;
  model: string;
  billingType: 'metered_api' | 'subscription_included' | 'unknown';
  /** The UNCACHED input. */
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens?: number;
  outputTokens: number;
  /** When the tool reports its own cost. */
  costUsd?: number;
  /** True when the figures are totals over the whole session so far (the core meters the difference to what earlier runs recorded). */
  cumulative?: boolean;
}

export interface Failure { errorCode: string; message: string; retryAt?: string | null }

/** One line's meaning; a line the parser does not know gives { transcript: [{ kind: 'log', line }] }. */
export interface ParsedLine {
  transcript?: TranscriptEntry[];
  usage?: ToolUsage;
  sessionId?: string;
  result?: { text: string | null; isError: boolean; subtype?: string; turns?: number; durationMs?: number };
  failure?: Failure;
}

/** A probe's outcome (ctx.executions.probe). */
export interface ProbeOutcome { exitCode: number | null; signal: string | null; stdout: string; stderr: string; timedOut: boolean; spawnError: string | null }

/**
 * A tool's name, executable, install command, default model, effort values and max turns as
 * the SDK's adapter catalog declares them (LOCAL_TOOLS): the console and the llms texts show
 * the same row the driver runs with.
 */
type Row<T extends keyof typeof LOCAL_TOOLS> = (typeof LOCAL_TOOLS)[T];
export function catalogFacts<T extends keyof typeof LOCAL_TOOLS>(type: T): {
  adapterType: Row<T>['type']; displayName: string; executable: string; install: string;
  /** The row's own literal: a tool with a default model reads it as a string. */
  defaultModel: Row<T>['defaultModel']; efforts: readonly string[] | null; supportsMaxTurns: boolean;
} {
  const tool = LOCAL_TOOLS[type];
  return {
    adapterType: tool.type, displayName: tool.tool, executable: tool.executable, install: tool.install,
    defaultModel: tool.defaultModel, efforts: tool.efforts, supportsMaxTurns: tool.maxTurns,
  };
}

export interface ToolDriver {
  adapterType: string;
  displayName: string;
  executable: string;
  /** The install command an operator runs, e.g. 'npm install -g @anthropic-ai/claude-code'. */
  install: string;
  /** Human text, e.g. '2.x (tested with 2.1.332)'. */
  supportedVersions: string;
  defaultModel: string | null;
  efforts: readonly string[] | null;
  supportsMaxTurns: boolean;
  /** Flags extraArgs may carry; takesValue when the next argument is its value. */
  allowedExtraArgs: Array<{ flag: string; takesValue: boolean }>;
  launch(input: LaunchInput): Launch;
  /**
   * A fresh parser for each batch of output lines: it must not rely on state from earlier batches.
   * `config` is the agent's configuration when the core has it: what a tool's lines do not say
   * (Codex's events never name the model the usage belongs to).
   */
  parser(config?: LocalConfig): { line(data: Record<string, unknown>): ParsedLine };
  /** The failure of an ended execution from its exit and its log's tail (plain text), or null when it succeeded. */
  classify(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }): Failure | null;
  /** The environment test: the version check and one minimal model call. */
  versionArgs: string[];
  parseVersion(stdout: string): string | null;
  /** `homeFiles`: settings the tool needs in the agent's home to run at all (a run writes them too), written before the probe. */
  probe(config: LocalConfig): { args: string[]; stdin: string; env: Record<string, string>; homeVariables: Record<string, string>; homeFiles?: RunFile[] };
  /** Present when the tool's model calls can go through Keel's model gateway. */
  gateway?: GatewaySupport;
  /** The tool's login or token set-up (POST /api/agents/{agentId}/alpha-login), when it has one. */
  login?: {
    /** A probe telling whether the tool is logged in (e.g. ['auth', 'status']), or null. */
    statusArgs: string[] | null;
    answer(input: { config: LocalConfig; status: ProbeOutcome | null }): Record<string, unknown>;
  };
}
