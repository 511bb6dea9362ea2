/** One transcript entry (docs/api/runtime.md, `service.transcript`). */
export type TranscriptEntry =
  | { kind: 'init'; sessionId?: string; model?: string; version?: string; tools?: string[] }
  | { kind: 'assistant'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'tool_call'; id?: string; name: string; input: unknown }
  | { kind: 'tool_result'; id?: string; output: string; isError?: boolean }
  | { kind: 'error'; message: string }
  | { kind: 'result'; text?: string; isError?: boolean; turns?: number; durationMs?: number }
  | { kind: 'system'; message: string }
  | { kind: 'log'; line: string };

/** The adapter configuration every local adapter shares, validated and normalised by the core. */
export interface LocalConfig {
  command: string;               // default: the driver's executable
  cwd: string | null;            // absolute; null = the run's own folder
  model: string | null;          // default: driver.defaultModel
  extraArgs: string[];           // checked against driver.allowedExtraArgs
  effort: string | null;         // reasoning/effort level, when driver.efforts lists values
  maxTurns: number | null;       // when driver.supportsMaxTurns
  toolSandbox: boolean;          // keep the tool's own sandbox (default false: unattended, Keel's isolation is the boundary)
  timeoutSec: number; graceSec: number;
  env: Record<string, unknown>;  // plain values and secret references (the kernel resolves them)
}

/** What the core hands a driver to build one launch. */
export interface LaunchInput {
  config: LocalConfig;
  sessionId: string | null;      // the session to resume, or null for a fresh one
  prompt: string;                // goes on stdin (never in args)
  instructions: string | null;   // the agent's instructions bundle entry file (text), or null
  skills: Array<{ runtimeName: string; files: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }> }>;
}

export interface Launch {
  args: string[];
  stdin: string;
  /** Tool variables (not secrets): e.g. DISABLE_AUTOUPDATER=1. The run-variable rule applies (no PATH, LD_*, NODE_OPTIONS, ...). */
  env: Record<string, string>;
  /** Folders of the agent's persistent home the tool uses, as variables: { CLAUDE_CONFIG_DIR: '.claude' }. HOME is the home itself. */
  homeVariables: Record<string, string>;
  /** Files written into the home before the start (instructions where the tool reads user-level instructions, skills where it discovers them). */
  homeFiles: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>;
  /** Home folders emptied before homeFiles are written (the skills folder: skills no longer desired go). */
  homeReplace: string[];
  /** Files written into the working directory (relative paths). */
  files: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>;
  /** Arguments for a fresh start when a resume is refused: the kernel retries once when the tool exits non-zero and a line contains one of the substrings. */
  retryFresh: { args: string[]; ifOutputIncludes: string[] } | null;
}

/** One line's meaning. Every field optional; a line the parser does not know gives { transcript: [{kind: 'log', line}] }. */
export interface ParsedLine {
  transcript?: TranscriptEntry[];
  usage?: ToolUsage;             // as the tool reports it (the core turns it into service.usage, subtracting thread totals when cumulative)
  sessionId?: string;
  result?: { text: string | null; isError: boolean; subtype?: string };
  failure?: Failure;             // a failure the line itself reports (rate limit, auth, max turns, unknown session)
}

export interface ToolUsage {
  provider: string; model: string; billingType: 'metered_api' | 'subscription_included' | 'unknown';
  inputTokens: number;           // UNCACHED input
  cachedInputTokens: number;
  cacheWriteTokens?: number;
  outputTokens: number;
  costUsd?: number;              // when the tool reports its own cost
  /** true when the figures are totals over the whole session/thread so far (Codex). */
  cumulative?: boolean;
}

export interface Failure { errorCode: string; message: string; retryAt?: string | null }

export interface ToolDriver {
  adapterType: string;           // 'alpha_local'
  displayName: string;           // 'Claude Code'
  executable: string;            // 'claude'
  install: string;               // 'npm install -g @anthropic-ai/claude-code'
  supportedVersions: string;     // human text, e.g. '2.x (tested with 2.1.332)'
  defaultModel: string | null;
  efforts: string[] | null;      // accepted effort values, or null when the tool has none
  supportsMaxTurns: boolean;
  /** Flags extraArgs may carry (exact flag names, e.g. '--add-dir'); with takesValue when the next argument is its value. */
  allowedExtraArgs: Array<{ flag: string; takesValue: boolean }>;
  launch(input: LaunchInput): Launch;
  /** A fresh parser per execution (it may keep state across the lines of one execution). */
  parser(): { line(data: Record<string, unknown>): ParsedLine };
  /** The failure of an ended execution from its exit and the tail of its log (plain text lines), or null when it succeeded. */
  classify(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }): Failure | null;
  /** The environment test: the version check and one minimal model call. */
  versionArgs: string[];
  parseVersion(stdout: string): string | null;
  probe(config: LocalConfig): { args: string[]; stdin: string; env: Record<string, string>; homeVariables: Record<string, string> };
}
