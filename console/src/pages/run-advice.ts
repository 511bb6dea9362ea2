/**
 * What to do about a run that ended badly, one sentence per known `errorCode` (docs/api/local-adapters.md
 * "Failures", docs/api/runtime.md "Error codes of a failed run") or `cancelReason`. One table: a code
 * not in it gets no advice, only its name.
 */
const BY_CODE: Record<string, string> = {
  adapter_unavailable: 'The tool is not installed where Keel runs agents, or the agent user cannot run it: install it (the error names the command) and run again.',
  tool_auth_required: 'The tool has no valid credential: set its API key in the agent\'s environment (as a secret) or log it in, then run again.',
  tool_rate_limited: 'The provider rate-limited the tool: wait for the reset time and run again.',
  tool_quota_exhausted: 'The account\'s quota or credit is used up: top it up or switch the agent to another account.',
  tool_session_unknown: 'The tool refused to resume its session: reset the agent\'s session and run again.',
  tool_max_turns: 'The tool stopped at its turn limit: raise Max turns in the agent\'s settings or split the work.',
  tool_crashed: 'The tool exited with an error: the end of the raw log says why.',
  tool_output_malformed: 'The tool finished without a usable result: check its version is one Keel supports.',
  timeout: 'The run passed its time limit: raise timeoutSec in the agent\'s configuration or split the work.',
  spawn_failed: 'The command could not be started: check the command and working directory in the agent\'s configuration.',
  exit_status: 'The process exited with a non-zero code: the end of the raw log says why.',
  http_status: 'The agent\'s endpoint answered with an error status: check the endpoint and its logs.',
  environment_not_found: 'The agent\'s environment no longer exists: choose another one in its configuration.',
  environment_unavailable: 'The environments plugin is not running: enable it in Plugins, or remove the environment from the agent.',
  remote_auth_failed: 'The run server refused the key: check the key the agent\'s configuration uses.',
  remote_runs_unsupported: 'The run server does not take runs: check its URL.',
  remote_rate_limited: 'The run server kept rate-limiting: wait and run again.',
  remote_upstream_error: 'The run server kept failing: check its health and logs.',
  remote_connection_failed: 'The run server could not be reached: check that it is running and its URL.',
  remote_protocol_error: 'The run server answered something Keel cannot follow: check its version.',
  remote_run_failed: 'The run server reported the run failed: its own logs say why.',
  remote_run_cancelled: 'The run server cancelled the run.',
  remote_run_id_taken: 'The run server handed out a run another Keel run already follows: check the run server.',
  budget_hard_stop_agent: 'The agent reached its hard budget stop: raise its budget (Costs) to resume it.',
  budget_hard_stop_company: 'The company reached its hard budget stop: raise the company budget (Costs) to resume it.',
  budget_hard_stop_project: 'The project reached its hard budget stop: raise the project budget (Costs) to resume it.',
  budget_blocked: 'A hard budget stop blocks this work: raise the budget that stopped it (Costs).',
  cancelled_by_request: 'Someone cancelled the run.',
  company_archived: 'The company was archived.',
};

/** The advice for a run's error code or cancel reason (`agent_paused:<reason>` counts as `agent_paused`). */
export function adviceFor(code: string | null | undefined): string | null {
  if (!code) return null;
  if (BY_CODE[code]) return BY_CODE[code]!;
  if (code.startsWith('agent_paused:budget')) return BY_CODE.budget_hard_stop_agent!;
  if (code.startsWith('company_paused:budget')) return BY_CODE.budget_hard_stop_company!;
  if (code.startsWith('agent_paused')) return 'The agent was paused: resume it on its page to run again.';
  if (code.startsWith('agent_terminated')) return 'The agent was terminated.';
  if (code.startsWith('company_paused')) return 'The company was paused: resume it to run again.';
  return null;
}

/**
 * The code and advice of a run that ended badly: its errorCode, else (cancelled) its cancelReason;
 * a failed process without a code is advised as a non-zero exit.
 */
export function runTrouble(run: { status: string; errorCode?: string | null; cancelReason?: string | null; exitCode?: number | null }): { code: string | null; advice: string | null } {
  const code = run.errorCode ?? (run.status === 'cancelled' ? run.cancelReason ?? null : null);
  const nonZeroExit = run.status === 'failed' && run.exitCode !== null && run.exitCode !== undefined && run.exitCode !== 0;
  return { code, advice: adviceFor(code) ?? (nonZeroExit ? BY_CODE.exit_status! : null) };
}
