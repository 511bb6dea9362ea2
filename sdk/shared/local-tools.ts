/**
 * The facts of the coding-agent tools, apart from the adapter catalog (adapter-catalog.ts) so
 * that a plugin bundle importing them (through @keel/sdk/plugin) carries these rows only, not
 * the catalog's texts.
 */

/**
 * A coding-agent command-line tool the coding-agents plugin drives on this machine (one driver
 * per tool, plugins/coding-agents/src/tools/): its name, executable, install command, default
 * model, effort values and max turns. The drivers take these facts from LOCAL_TOOLS (through
 * @keel/sdk/plugin), so what the catalog shows is what the driver runs; the fields every local
 * adapter shares are the plugin's (plugins/coding-agents/src/config.ts), held to these rows by
 * test/plugins/coding-agents/adapter-catalog.test.ts.
 */
export interface LocalTool {
  type: string;
  tool: string; executable: string; install: string;
  defaultModel: string | null;
  efforts: readonly string[] | null;
  maxTurns: boolean;
  /** What the model gateway serves for this tool (the kind of provider its runs use by default), in words; null: it does not route through the gateway. */
  gateway: string | null;
}

export const LOCAL_TOOLS = {
  // Claude Code picks its own default model for the account (an API key and a subscription differ).
  alpha_local: { type: 'alpha_local', tool: 'Claude Code', executable: 'claude', install: 'npm install -g @anthropic-ai/claude-code', defaultModel: null, efforts: ['low', 'medium', 'high', 'xhigh', 'max'], maxTurns: true, gateway: 'kind anthropic' },
  // Codex 0.171's own default model (`codex debug models`: the catalog's first entry).
  beta_local: { type: 'beta_local', tool: 'Codex CLI', executable: 'codex', install: 'npm install -g @openai/codex', defaultModel: 'gpt-6.2-sol', efforts: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', 'ultra'], maxTurns: false, gateway: 'kind openai (the Responses API)' },
  gamma_local: { type: 'gamma_local', tool: 'Gemini CLI', executable: 'gemini', install: 'npm install -g @google/gemini-cli', defaultModel: 'auto', efforts: null, maxTurns: true, gateway: 'kind gemini' },
  delta_local: { type: 'delta_local', tool: 'OpenCode', executable: 'opencode', install: 'npm install -g opencode-ai', defaultModel: null, efforts: ['minimal', 'low', 'medium', 'high', 'max'], maxTurns: false, gateway: 'the kind its model names (anthropic/…, openai/…, google/…: anthropic, openai, gemini), unless env sets OPENCODE_CONFIG_CONTENT or OPENCODE_CONFIG (its own providers)' },
  pi_local: { type: 'pi_local', tool: 'Pi', executable: 'pi', install: 'npm install -g @mariozechner/pi-coding-agent', defaultModel: null, efforts: ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'], maxTurns: false, gateway: null },
  cursor: { type: 'cursor', tool: 'Cursor CLI', executable: 'cursor-agent', install: 'curl https://cursor.com/install -fsS | bash', defaultModel: 'auto', efforts: null, maxTurns: false, gateway: null },
} as const satisfies Record<string, LocalTool>;
