import { classifyCursor, CURSOR_SESSION_REFUSED, parseCursorLine, type CursorContext } from './cursor-events.ts';
import { catalogFacts, type Launch, type LaunchInput, type LocalConfig, type ToolDriver } from './driver.ts';

/**
 * `cursor`: Cursor's agent CLI (`cursor-agent`, also installed as `agent`; not on npm), run as
 * `cursor-agent -p --output-format stream-json` with the prompt on stdin, resumed with
 * `--resume=<session_id>`. Built from Cursor's documentation (cursor.com/docs/cli: the
 * parameters, output format and authentication pages) and what integrations of recent builds
 * report; it has NOT been run against the real tool, which cannot be installed here.
 *
 * - Unattended: `--force` ("force allow commands unless explicitly denied") and `--trust` (trust
 *   the working directory without asking). `toolSandbox` adds `--sandbox enabled`, the CLI's
 *   own sandbox, whose network policy decides whether the agent still reaches Keel.
 * - The home: the CLI keeps its login and chats under `$HOME/.cursor` (and `~/.config/cursor`),
 *   so the agent's home holds them. Skills: `.cursor/skills/<name>/SKILL.md`.
 * - Instructions: the CLI has no user-level instructions file (it reads AGENTS.md and
 *   .cursor/rules of the workspace, which belong to the repository), so the instructions bundle
 *   goes at the head of the prompt.
 * - Credentials: CURSOR_API_KEY in adapterConfig.env (or a `cursor-agent login` in the agent's
 *   home). Usage is billed to the Cursor account's plan, not per token by Keel's price list.
 * - Keel's model gateway does not serve it (no `gateway`): the CLI talks to Cursor's own service
 *   only, with no base-URL setting; `adapterConfig.modelProvider` is accepted and ignored.
 */

/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('cursor');
/** Cursor's own default: `auto` lets Cursor pick the model per request. */
const DEFAULT_MODEL = FACTS.defaultModel;

function commonArgs(local: LocalConfig): string[] {
  return [
    '-p', '--output-format', 'stream-json', '--force', '--trust',
    ...(local.toolSandbox ? ['--sandbox', 'enabled'] : []),
    '--model', local.model ?? DEFAULT_MODEL,
  ];
}

/** The instructions, then the wake's prompt: the CLI has nowhere of the agent's own to read instructions from. */
function promptWithInstructions(prompt: string, instructions: string | null): string {
  if (!instructions?.trim()) return prompt;
  return `<agent-instructions>\n${instructions.trim()}\n</agent-instructions>\n\n${prompt}`;
}

function launch(input: LaunchInput): Launch {
  const { config: local, sessionId } = input;
  const fresh = [...commonArgs(local), ...local.extraArgs];
  return {
    // `--resume=<id>` in one argument: the flag's value is optional, so it must not be taken for the next flag.
    args: sessionId ? [...fresh, `--resume=${sessionId}`] : fresh,
    stdin: promptWithInstructions(input.prompt, input.instructions),
    env: { NO_OPEN_BROWSER: '1' },
    homeVariables: {},
    homeFiles: input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `.cursor/skills/${skill.runtimeName}/${file.path}` }))),
    homeReplace: ['.cursor/skills'],
    files: [],
    retryFresh: sessionId ? { args: fresh, ifOutputIncludes: CURSOR_SESSION_REFUSED } : null,
  };
}

function context(local: LocalConfig | undefined): CursorContext {
  // A Cursor key or login draws on the account's plan; Keel cannot price Cursor's requests per token.
  return { model: local?.model ?? DEFAULT_MODEL, billingType: 'subscription_included' };
}

export const cursorDriver: ToolDriver & { parser(config?: LocalConfig): ReturnType<ToolDriver['parser']> } = {
  ...FACTS,
  supportedVersions: 'untested: built from Cursor\'s documentation of the 2026 builds (`-p --output-format stream-json`, `--force`, `--trust`, `--resume`, `--model`; usage on the result event as recent builds report it)',
  // Flags that neither move output, sessions or the workspace, nor carry a prompt, header or credential, nor change the approval mode.
  allowedExtraArgs: [
    { flag: '--mode', takesValue: true },
    { flag: '--add-dir', takesValue: true },
    { flag: '--approve-mcps', takesValue: false },
  ],
  launch,
  /** The usage is named after the configured model: the result event does not name one, and the init event may come in another batch. */
  parser(local?: LocalConfig) {
    const usage = context(local);
    return { line: (data) => parseCursorLine(data, usage) };
  },
  classify: (input) => classifyCursor(input, FACTS.install),
  versionArgs: ['--version'],
  parseVersion: (stdout) => /\b(\d{4}\.\d{1,2}\.\d{1,2}-[0-9a-f]+)\b/.exec(stdout)?.[1] ?? /\b(\d+\.\d+\.\d+[\w.+-]*)\b/.exec(stdout)?.[1] ?? null,
  probe(local) {
    return { args: commonArgs(local), stdin: 'Reply with the single word OK.', env: { NO_OPEN_BROWSER: '1' }, homeVariables: {} };
  },
};
