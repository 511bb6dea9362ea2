/**
 * Claude Code's login for an alpha_local agent (POST /api/agents/{agentId}/alpha-login).
 *
 * What the tool offers without a terminal (2.1.332): `claude auth status --json` says, offline,
 * whether a credential is configured and which kind (`authMethod`: api_key, oauth_token, none;
 * exit 1 when none). `claude setup-token` makes a one-year token of a Claude subscription, but it
 * needs a terminal and a browser; `claude auth login` prints a sign-in address and waits for a
 * pasted code in the same process (the verifier lives only in its memory), so it cannot span two
 * requests to a server that may be several processes. So Keel does not run the interactive login:
 * it reports the agent's state and the operator's next step, which leaves the credential as a
 * secret reference in the agent's env, where the kernel delivers it to runs only.
 */
import type { LocalConfig, ProbeOutcome } from './driver.ts';

export const LOGIN_STATUS_ARGS = ['auth', 'status', '--json'];

interface AuthStatus { loggedIn?: unknown; authMethod?: unknown; apiKeySource?: unknown; apiProvider?: unknown }

export function loginAnswer({ config, status }: { config: LocalConfig; status: ProbeOutcome | null }): Record<string, unknown> {
  const parsed = readStatus(status);
  const configured = Object.keys(config.env).filter((name) => CREDENTIAL_VARIABLES.includes(name));
  const loggedIn = parsed ? parsed.loggedIn === true : null;
  return {
    adapterType: 'alpha_local',
    status: loggedIn ? 'logged_in' : 'action_required',
    loggedIn,
    authMethod: typeof parsed?.authMethod === 'string' ? parsed.authMethod : null,
    apiProvider: typeof parsed?.apiProvider === 'string' ? parsed.apiProvider : null,
    credentialVariables: configured,
    ...(status?.spawnError ? { error: `${config.command} could not be started (${status.spawnError}): install Claude Code with npm install -g @anthropic-ai/claude-code` } : {}),
    ...(parsed === null && status && !status.spawnError ? { error: `claude auth status answered no status: ${(status.stderr || status.stdout).trim().slice(0, 500)}` } : {}),
    nextStep: loggedIn
      ? 'A credential is configured (Claude Code checks it only when it calls the model): run POST /api/agents/{agentId}/adapter-test to make one minimal model call with it.'
      : 'Give the agent a credential (one of the options), then run POST /api/agents/{agentId}/adapter-test.',
    options: OPTIONS,
  };
}

const CREDENTIAL_VARIABLES = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'];

const SET_SECRET = [
  'Store it as a company secret: POST /api/companies/{companyId}/secrets {"name": "...", "value": "<the token>"}.',
  'Point the agent at it: PATCH /api/agents/{agentId} {"adapterConfig": {"env": {"<variable>": {"type": "secret_ref", "secretId": "<the secret id>"}}}}.',
];

const OPTIONS = [
  {
    method: 'subscription_token', variable: 'CLAUDE_CODE_OAUTH_TOKEN', billing: 'subscription_included',
    steps: [
      'On any machine with a browser and Claude Code, run `claude setup-token` (needs a Claude Pro or Max subscription), sign in, and copy the token it prints (sk-ant-oat01-…, valid one year).',
      ...SET_SECRET,
    ],
  },
  {
    method: 'api_key', variable: 'ANTHROPIC_API_KEY', billing: 'metered_api',
    steps: ['Create an API key in the Anthropic Console (Settings → API keys).', ...SET_SECRET],
  },
];

function readStatus(status: ProbeOutcome | null): AuthStatus | null {
  if (!status || status.spawnError) return null;
  try {
    const value = JSON.parse(status.stdout) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? value as AuthStatus : null;
  } catch {
    return null;
  }
}
