import { describe, expect, it } from 'vitest';
import type { LocalConfig } from '../../../plugins/coding-agents/src/tools/driver.ts';
import { piDriver as driver } from '../../../plugins/coding-agents/src/tools/pi.ts';
import { capturedRun, logTail, parseRun } from './fixture-lines.ts';

/** The Pi driver against the real output of Pi 0.73.1 (test/fixtures/coding-agents/pi/). */

const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'pi', cwd: null, model: 'scripted/scripted-model', extraArgs: [], effort: null, maxTurns: null,
  toolSandbox: false, timeoutSec: 600, graceSec: 10, env: {}, ...overrides,
});
const skills = [{ runtimeName: 'keel-api', files: [{ path: 'SKILL.md', content: '---\nname: keel-api\n---\n' }, { path: 'scripts/call.sh', content: 'ZWNobw==', encoding: 'base64' as const }] }];

describe('Pi launch', () => {
  it('runs in JSON print mode with the prompt on stdin and the configuration folders in the home', () => {
    const launch = driver.launch({ config: config({ effort: 'high' }), sessionId: null, prompt: 'Work on KEEL-1', instructions: 'Be brief.', skills });
    expect(launch.args).toEqual(['--mode', 'json', '-p', '--model', 'scripted/scripted-model', '--thinking', 'high', '--append-system-prompt', '.keel/pi/instructions.md']);
    expect(launch.stdin).toBe('Work on KEEL-1');
    expect(launch.homeVariables).toEqual({ PI_CODING_AGENT_DIR: '.pi/agent', PI_CODING_AGENT_SESSION_DIR: '.pi/agent/sessions' });
    expect(launch.env).toEqual({ PI_OFFLINE: '1', PI_TELEMETRY: '0', PI_SKIP_VERSION_CHECK: '1' });
    expect(launch.retryFresh).toBeNull();
  });

  it('appends the instructions from a file of the working directory and writes the skills under ~/.agents/skills', () => {
    const launch = driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: 'Be brief.', skills });
    expect(launch.files).toEqual([{ path: '.keel/pi/instructions.md', content: 'Be brief.' }]);
    expect(launch.homeFiles).toEqual([
      { path: '.agents/skills/keel-api/SKILL.md', content: '---\nname: keel-api\n---\n' },
      { path: '.agents/skills/keel-api/scripts/call.sh', content: 'ZWNobw==', encoding: 'base64' },
    ]);
    expect(launch.homeReplace).toEqual(['.agents/skills']);
    const without = driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: null, skills: [] });
    expect(without.args).not.toContain('--append-system-prompt');
    expect(without.files).toEqual([]);
  });

  it('resumes by session id and retries fresh when Pi finds no such session', () => {
    const launch = driver.launch({ config: config({ extraArgs: ['--no-extensions'] }), sessionId: '01a2-x', prompt: 'p', instructions: null, skills: [] });
    expect(launch.args.slice(-3)).toEqual(['--session', '01a2-x', '--no-extensions']);
    expect(launch.retryFresh).toEqual({ args: ['--mode', 'json', '-p', '--model', 'scripted/scripted-model', '--no-extensions'], ifOutputIncludes: ['No session found matching', 'Stored session working directory does not exist'] });
    expect(capturedRun('pi', 'unknown-session').stderr).toContain('No session found matching');
  });

  it('matches the flags of the captured runs', () => {
    expect(capturedRun('pi', 'fresh-run').args).toEqual(driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: 'i', skills: [] }).args);
  });
});

describe('Pi events', () => {
  it('turns a run into a transcript, per-message usage, the session id and the final text', () => {
    const run = capturedRun('pi', 'fresh-run');
    const lines = parseRun(driver, run);
    const transcript = lines.flatMap((line) => line.transcript ?? []);
    expect(transcript.map((entry) => entry.kind)).toEqual(['init', 'assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(transcript[0]).toEqual({ kind: 'init', sessionId: '01a22618-2556-7441-a201-17ab3a1e37df' });
    expect(transcript[2]).toMatchObject({ kind: 'tool_call', name: 'bash', input: { command: 'echo hello-from-tool && id -un' } });
    expect(transcript[3]).toMatchObject({ kind: 'tool_result', output: 'hello-from-tool\nkeel-agent\n' });
    expect((transcript[2] as { id?: string }).id).toBe((transcript[3] as { id?: string }).id);
    expect(lines.map((line) => line.sessionId).filter(Boolean)).toEqual(['01a22618-2556-7441-a201-17ab3a1e37df']);
    expect(lines.map((line) => line.usage).filter(Boolean)).toEqual([
      { provider: 'scripted', model: 'scripted-model', billingType: 'metered_api', inputTokens: 300, cachedInputTokens: 800, cacheWriteTokens: 0, outputTokens: 21, costUsd: 0.001455 },
      { provider: 'scripted', model: 'scripted-model', billingType: 'metered_api', inputTokens: 200, cachedInputTokens: 1000, cacheWriteTokens: 0, outputTokens: 9, costUsd: 0.0010350000000000001 },
    ]);
    expect(lines.map((line) => line.result).filter(Boolean)).toEqual([{ text: 'Done: the shell said hello.', isError: false, subtype: 'stop' }]);
    // The streaming deltas and lifecycle marks add nothing: no log entries from a known run.
    expect(transcript.some((entry) => entry.kind === 'log')).toBe(false);
    expect(driver.classify({ exitCode: 0, signal: null, logTail: logTail(run), sawResult: true })).toBeNull();
  });

  it('reports a refused key as authentication required although Pi exits 0', () => {
    const run = capturedRun('pi', 'auth-error');
    expect(run.exitCode).toBe(0);
    const lines = parseRun(driver, run);
    expect(lines.map((line) => line.failure).filter(Boolean)).toEqual([expect.objectContaining({ errorCode: 'tool_auth_required' })]);
    expect(lines.map((line) => line.result).filter(Boolean)).toEqual([{ text: '401 Incorrect API key provided', isError: true }]);
    expect(lines.some((line) => line.usage)).toBe(false);
    expect(driver.classify({ exitCode: 0, signal: null, logTail: logTail(run), sawResult: false })).toMatchObject({ errorCode: 'tool_auth_required' });
    // The environment test's probe counts an exit 0 as a result: the log's lines still decide.
    expect(driver.classify({ exitCode: 0, signal: null, logTail: logTail(run), sawResult: true })).toMatchObject({ errorCode: 'tool_auth_required' });
  });

  it('fails an exhausted quota only once Pi has given up its own retries', () => {
    const lines = parseRun(driver, capturedRun('pi', 'quota-exhausted'));
    const failures = lines.map((line) => line.failure).filter(Boolean);
    expect(failures).toEqual([expect.objectContaining({ errorCode: 'tool_quota_exhausted' })]);
    const transcript = lines.flatMap((line) => line.transcript ?? []);
    expect(transcript.filter((entry) => entry.kind === 'system')).toHaveLength(3);
    expect(lines.findIndex((line) => line.failure)).toBe(lines.length - 1);
  });

  it('classifies an unknown session from its exit', () => {
    const run = capturedRun('pi', 'unknown-session');
    expect(driver.classify({ exitCode: run.exitCode, signal: null, logTail: logTail(run), sawResult: false })).toMatchObject({ errorCode: 'tool_session_unknown' });
    expect(driver.classify({ exitCode: null, signal: 'SIGKILL', logTail: '', sawResult: false })).toMatchObject({ errorCode: 'tool_crashed' });
  });

  it('keeps a line it does not know as a log entry', () => {
    const line = { type: 'brand_new_event', x: 1 };
    expect(driver.parser().line(line).transcript).toEqual([{ kind: 'log', line: JSON.stringify(line) }]);
  });

  it('reads the version Pi prints on stderr', () => {
    expect(driver.parseVersion('0.73.1\n')).toBe('0.73.1');
  });
});
