import { describe, expect, it } from 'vitest';
import type { LocalConfig } from '../../../plugins/coding-agents/src/tools/driver.ts';
import { opencodeDriver as driver } from '../../../plugins/coding-agents/src/tools/opencode.ts';
import { capturedRun, logTail, parseRun } from './fixture-lines.ts';

/** The OpenCode driver against the real output of OpenCode 1.18.33 (test/fixtures/coding-agents/opencode/). */

const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'opencode', cwd: null, model: 'scripted/scripted-model', extraArgs: [], effort: null, maxTurns: null,
  toolSandbox: false, timeoutSec: 600, graceSec: 10, env: {}, ...overrides,
});
const skills = [{ runtimeName: 'keel-api', files: [{ path: 'SKILL.md', content: '---\nname: keel-api\n---\n' }] }];

describe('OpenCode launch', () => {
  it('runs unattended with JSON events and the prompt on stdin, never in the arguments', () => {
    const launch = driver.launch({ config: config(), sessionId: null, prompt: 'Work on KEEL-1', instructions: 'Be brief.', skills });
    expect(launch.args).toEqual(['run', '--format', 'json', '--title', 'Keel run', '--thinking', '--print-logs', '--log-level', 'ERROR', '--auto', '--model', 'scripted/scripted-model']);
    expect(launch.stdin).toBe('Work on KEEL-1');
    expect(launch.args.join(' ')).not.toContain('KEEL-1');
    expect(launch.retryFresh).toBeNull();
    expect(launch.homeVariables).toMatchObject({ XDG_CONFIG_HOME: '.config', XDG_DATA_HOME: '.local/share' });
    expect(launch.env).toMatchObject({ OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1' });
  });

  it('writes the instructions as the user-level AGENTS.md and the skills where OpenCode discovers them', () => {
    const launch = driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: 'Be brief.', skills });
    expect(launch.homeFiles).toEqual([
      { path: '.config/opencode/AGENTS.md', content: 'Be brief.' },
      { path: '.config/opencode/skills/keel-api/SKILL.md', content: '---\nname: keel-api\n---\n' },
    ]);
    expect(launch.homeReplace).toEqual(['.config/opencode/skills']);
    const without = driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: null, skills: [] });
    expect(without.homeFiles).toEqual([{ path: '.config/opencode/AGENTS.md', content: '' }]);
  });

  it('resumes with --session and retries fresh when OpenCode does not know it', () => {
    const launch = driver.launch({ config: config({ extraArgs: ['--agent', 'build'] }), sessionId: 'ses_abc', prompt: 'p', instructions: null, skills: [] });
    expect(launch.args.slice(-4)).toEqual(['--session', 'ses_abc', '--agent', 'build']);
    expect(launch.retryFresh).toEqual({ args: expect.not.arrayContaining(['--session']), ifOutputIncludes: ['Session not found', 'NotFound: FileSystem.realPath'] });
    expect(launch.retryFresh!.args.slice(-2)).toEqual(['--agent', 'build']);
  });

  it('keeps its permission rules under toolSandbox and passes the effort as --variant', () => {
    const launch = driver.launch({ config: config({ toolSandbox: true, effort: 'high', model: null }), sessionId: null, prompt: 'p', instructions: null, skills: [] });
    expect(launch.args).not.toContain('--auto');
    expect(launch.args).not.toContain('--model');
    expect(launch.args.slice(-2)).toEqual(['--variant', 'high']);
  });

  it('matches the flags of the captured runs', () => {
    expect(capturedRun('opencode', 'fresh-run').args).toEqual(driver.launch({ config: config(), sessionId: null, prompt: 'p', instructions: null, skills: [] }).args);
  });
});

describe('OpenCode events', () => {
  it('turns a run into a transcript, per-step usage, the session id and the final text', () => {
    const lines = parseRun(driver, capturedRun('opencode', 'fresh-run'));
    const transcript = lines.flatMap((line) => line.transcript ?? []);
    expect(transcript.map((entry) => entry.kind)).toEqual(['assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    expect(transcript[0]).toEqual({ kind: 'assistant', text: 'I will run the command.' });
    expect(transcript[1]).toMatchObject({ kind: 'tool_call', id: 'call_1', name: 'bash', input: { command: 'echo hello-from-tool && id -un' } });
    expect(transcript[2]).toEqual({ kind: 'tool_result', id: 'call_1', output: 'hello-from-tool\nkeel-agent\n' });
    expect(transcript[4]).toEqual({ kind: 'result', text: 'Done: the shell said hello.' });
    expect(new Set(lines.map((line) => line.sessionId))).toEqual(new Set(['ses_dd9d18d19ffe5Poh8q4w05GQYi']));
    // Two model calls: 1100 prompt tokens of which 800 cached, then 1200 of which 1000 cached.
    expect(lines.map((line) => line.usage).filter(Boolean)).toEqual([
      expect.objectContaining({ inputTokens: 300, cachedInputTokens: 800, cacheWriteTokens: 0, outputTokens: 21, costUsd: 0.001455 }),
      expect.objectContaining({ inputTokens: 200, cachedInputTokens: 1000, cacheWriteTokens: 0, outputTokens: 9, costUsd: 0.001035 }),
    ]);
    expect(lines.map((line) => line.result).filter(Boolean)).toEqual([{ text: 'Done: the shell said hello.', isError: false, subtype: 'stop' }]);
    expect(lines.some((line) => line.failure)).toBe(false);
  });

  it('reads each line on its own: a batch that starts at the final step names no text, and the core takes the answer it collected', () => {
    const run = capturedRun('opencode', 'fresh-run');
    const cut = run.events.findIndex((event) => event.type === 'step_finish' && (event.part as { reason?: string }).reason === 'stop');
    const second = driver.parser().line(run.events[cut]!);
    expect(second.result).toEqual({ text: null, isError: false, subtype: 'stop' });
    expect(second.transcript).toEqual([{ kind: 'result' }]);
    expect(second.usage).toMatchObject({ inputTokens: 200, cachedInputTokens: 1000 });
  });

  it('attributes the usage to the configured provider and model, which OpenCode\'s events do not name', () => {
    const run = capturedRun('opencode', 'fresh-run');
    const step = run.events.find((event) => event.type === 'step_finish')!;
    expect(driver.parser(config()).line(step).usage).toMatchObject({ provider: 'scripted', model: 'scripted-model', billingType: 'metered_api' });
    expect(driver.parser(config({ model: null })).line(step).usage).toMatchObject({ provider: 'opencode', model: 'unknown' });
    expect(driver.parser().line(step).usage).toMatchObject({ provider: 'opencode', model: 'unknown' });
  });

  it('keeps the session of a resumed run', () => {
    const lines = parseRun(driver, capturedRun('opencode', 'resumed-run'));
    expect(new Set(lines.map((line) => line.sessionId))).toEqual(new Set(['ses_dd9d18d19ffe5Poh8q4w05GQYi']));
  });

  it('reports a provider refusing the key as authentication required, from the event and from the exit', () => {
    const run = capturedRun('opencode', 'auth-error');
    const lines = parseRun(driver, run);
    expect(lines.flatMap((line) => line.transcript ?? []).map((entry) => entry.kind)).toEqual(['error']);
    expect(lines.at(-1)?.failure).toMatchObject({ errorCode: 'tool_auth_required' });
    expect(lines.at(-1)?.result).toMatchObject({ isError: true, text: 'Incorrect API key provided' });
    expect(driver.classify({ exitCode: run.exitCode, signal: run.signal, logTail: logTail(run), sawResult: true })).toMatchObject({ errorCode: 'tool_auth_required' });
  });

  it('names the exhausted quota once OpenCode gives up its retries (five, about a minute)', () => {
    const run = capturedRun('opencode', 'quota-exhausted');
    expect(run.exitCode).toBe(1);
    // Each retried call is logged as a stream error; the run's one event is the final error.
    expect(run.stderr.match(/message="stream error"/g)?.length).toBe(6);
    const lines = parseRun(driver, run);
    expect(lines.map((line) => line.failure)).toEqual([expect.objectContaining({ errorCode: 'tool_quota_exhausted' })]);
    expect(driver.classify({ exitCode: 1, signal: null, logTail: logTail(run), sawResult: true })).toMatchObject({ errorCode: 'tool_quota_exhausted' });
    // A run stopped while OpenCode still retried: the logged stream errors say why.
    const stopped = run.stderr.split('\n').slice(0, 2).join('\n');
    expect(driver.classify({ exitCode: null, signal: 'SIGTERM', logTail: stopped, sawResult: false })).toMatchObject({ errorCode: 'tool_quota_exhausted' });
  });

  it('classifies an unknown session, and a clean exit as success', () => {
    const unknown = capturedRun('opencode', 'unknown-session');
    expect(unknown.exitCode).toBe(1);
    expect(driver.classify({ exitCode: 1, signal: null, logTail: logTail(unknown), sawResult: false })).toMatchObject({ errorCode: 'tool_session_unknown' });
    // After the kernel's fresh start, what the refused resume printed does not decide the end.
    expect(driver.classify({ exitCode: 1, signal: null, logTail: `${logTail(unknown)}\nexited with code 1 refusing to resume its session: starting it once more with a fresh session\n${logTail(capturedRun('opencode', 'auth-error'))}`, sawResult: true }))
      .toMatchObject({ errorCode: 'tool_auth_required' });
    const fresh = capturedRun('opencode', 'fresh-run');
    expect(driver.classify({ exitCode: 0, signal: null, logTail: logTail(fresh), sawResult: true })).toBeNull();
    expect(driver.classify({ exitCode: 139, signal: null, logTail: 'Segmentation fault', sawResult: false })).toMatchObject({ errorCode: 'tool_crashed', message: expect.stringContaining('Segmentation fault') });
  });

  it('keeps a line it does not know as a log entry', () => {
    const line = { type: 'something_new', sessionID: 'ses_x', detail: 1 };
    const parsed = driver.parser().line(line);
    expect(parsed).toEqual({ transcript: [{ kind: 'log', line: JSON.stringify(line) }], sessionId: 'ses_x' });
  });

  it('reads the version it prints', () => {
    expect(driver.parseVersion('1.18.33\n')).toBe('1.18.33');
  });
});
