import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LocalConfig, ParsedLine } from '../../../plugins/coding-agents/src/tools/driver.ts';
import { geminiDriver } from '../../../plugins/coding-agents/src/tools/gemini.ts';

/** The parser and classifier read the real output of Gemini CLI 0.61.0 (captured by test/fixtures/coding-agents/gemini/capture.ts). */
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'gemini');
const read = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const stdoutLines = (name: string) => read(`${name}.stdout.jsonl`).split('\n').filter(Boolean);
const exitOf = (name: string) => (JSON.parse(read(`${name}.exit.json`)) as { exitCode: number }).exitCode;
const sessionOf = (name: string) => (JSON.parse(stdoutLines(name)[0]) as { session_id: string }).session_id;

const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'gemini', cwd: null, model: 'gemini-2.5-flash', extraArgs: [], effort: null, maxTurns: null, toolSandbox: false,
  timeoutSec: 600, graceSec: 5, env: { GEMINI_API_KEY: { type: 'secret_ref', secretId: 's1' } }, ...overrides,
});

function parseAll(name: string, local = config()): ParsedLine[] {
  const parser = geminiDriver.parser(local);
  return stdoutLines(name).map((line) => parser.line(JSON.parse(line) as Record<string, unknown>));
}
const transcriptOf = (parsed: ParsedLine[]) => parsed.flatMap((line) => line.transcript ?? []);
const usageOf = (parsed: ParsedLine[]) => parsed.filter((line) => line.usage).map((line) => line.usage);
const resultOf = (parsed: ParsedLine[]) => parsed.filter((line) => line.result).at(-1)?.result;
const classify = (name: string) => geminiDriver.classify({
  exitCode: exitOf(name), signal: null, logTail: `${read(`${name}.stdout.jsonl`)}${read(`${name}.stderr.txt`)}`, sawResult: read(`${name}.stdout.jsonl`).includes('"type":"result"'),
});

describe('Gemini driver: reading gemini --output-format stream-json', () => {
  it('turns a streamed answer into init, one assistant entry per chunk, the result, and usage split into cached and uncached', () => {
    const parsed = parseAll('text');
    const sessionId = sessionOf('text');
    const { stats } = JSON.parse(stdoutLines('text').at(-1)!) as { stats: { duration_ms: number } };
    expect(parsed.find((line) => line.sessionId)?.sessionId).toBe(sessionId);
    expect(transcriptOf(parsed)).toEqual([
      { kind: 'init', sessionId, model: 'gemini-2.5-flash' },
      { kind: 'assistant', text: 'Hello ' },
      { kind: 'assistant', text: 'from the model.' },
      { kind: 'result', isError: false, durationMs: stats.duration_ms },
    ]);
    // Scripted: 100 prompt tokens of which 40 cached, 7 out.
    expect(usageOf(parsed)).toEqual([{ provider: 'google', model: 'gemini-2.5-flash', billingType: 'metered_api', inputTokens: 60, cachedInputTokens: 40, outputTokens: 7 }]);
    // The result event carries no text: the core collects the answer (test/plugins/coding-agents/answer.test.ts).
    expect(resultOf(parsed)).toEqual({ text: null, isError: false, durationMs: stats.duration_ms });
    expect(classify('text')).toBeNull();
  });

  it('reads the shell tool call and its result, and counts thinking tokens as output (the stats leave them out of output_tokens)', () => {
    const parsed = parseAll('shell');
    const [call, result] = transcriptOf(parsed).filter((entry) => entry.kind === 'tool_call' || entry.kind === 'tool_result');
    expect(call).toEqual({ kind: 'tool_call', id: expect.stringMatching(/^run_shell_command__/), name: 'run_shell_command', input: { command: 'echo hello-from-shell; id -un' } });
    // The agent's shell ran as the agent user.
    expect(result).toEqual({ kind: 'tool_result', id: (call as { id: string }).id, output: 'hello-from-shell\nkeel-agent' });
    // Scripted: 1200 in (200 cached) + 1300 in (1000 cached), 30 + 12 out, and 40 thinking tokens.
    expect(usageOf(parsed)).toEqual([{ provider: 'google', model: 'gemini-2.5-flash', billingType: 'metered_api', inputTokens: 1300, cachedInputTokens: 1200, outputTokens: 82 }]);
  });

  it('sums the usage of the auto model\'s routing call and its turn, named after the model that answered', () => {
    const parsed = parseAll('auto-model', config({ model: null }));
    expect(transcriptOf(parsed)[0]).toEqual({ kind: 'init', sessionId: sessionOf('auto-model'), model: 'auto' });
    // Router: 50 in, 10 out on flash-lite; the turn: 900 in (100 cached), 4 out on flash.
    expect(usageOf(parsed)).toEqual([{ provider: 'google', model: 'gemini-3.8-flash', billingType: 'metered_api', inputTokens: 850, cachedInputTokens: 100, outputTokens: 14 }]);
  });

  it('reports a resumed session\'s own id and only this invocation\'s usage', () => {
    const parsed = parseAll('resume');
    expect(parsed.find((line) => line.sessionId)?.sessionId).toBe(sessionOf('shell'));
    expect(usageOf(parsed)).toEqual([expect.objectContaining({ inputTokens: 200, cachedInputTokens: 1300, outputTokens: 3 })]);
  });

  it('keeps tool errors in the transcript without failing the run', () => {
    const results = transcriptOf(parseAll('tool-errors')).filter((entry) => entry.kind === 'tool_result');
    expect(results.map((entry) => (entry as { isError?: boolean }).isError ?? false)).toEqual([false, true, true]);
    expect(results[2]).toMatchObject({ output: expect.stringContaining('Tool "no_such_tool" not found') });
    expect(classify('tool-errors')).toBeNull();
  });

  it('reads an error event: a warning (a loop detected) is a system entry and fails nothing; an error names the run\'s failure', () => {
    const parser = geminiDriver.parser(config());
    expect(parser.line({ type: 'error', severity: 'warning', message: 'Loop detected, stopping execution' })).toEqual({ transcript: [{ kind: 'system', message: 'Loop detected, stopping execution' }] });
    expect(parser.line({ type: 'error', severity: 'error', message: 'Maximum session turns exceeded' }).failure).toMatchObject({ errorCode: 'tool_max_turns' });
  });

  it('keeps an event it does not know as a log line', () => {
    const parsed = geminiDriver.parser(config()).line({ type: 'future_event', detail: 1 });
    expect(parsed).toEqual({ transcript: [{ kind: 'log', line: '{"type":"future_event","detail":1}' }] });
  });
});

describe('Gemini driver: classifying failures from the real output', () => {
  it('a session the home does not hold: exit 42 and "Error resuming session" on stderr, which retryFresh matches', () => {
    for (const name of ['unknown-session', 'unknown-session-empty-home']) {
      expect(exitOf(name)).toBe(42);
      expect(stdoutLines(name)).toEqual([]);
      expect(classify(name)).toMatchObject({ errorCode: 'tool_session_unknown' });
      const launch = geminiDriver.launch({ config: config(), sessionId: '11111111-2222-3333-4444-555555555555', prompt: 'p', instructions: null, skills: [] });
      expect(launch.retryFresh!.ifOutputIncludes.some((text) => read(`${name}.stderr.txt`).includes(text))).toBe(true);
    }
  });

  it('the turn limit: an error result of type FatalTurnLimitedError, exit 53, with the usage of the turns before it', () => {
    const parsed = parseAll('max-turns');
    expect(parsed.find((line) => line.failure)?.failure).toMatchObject({ errorCode: 'tool_max_turns' });
    expect(usageOf(parsed)).toEqual([expect.objectContaining({ inputTokens: 1000, cachedInputTokens: 200, outputTokens: 30 })]);
    expect(classify('max-turns')).toMatchObject({ errorCode: 'tool_max_turns' });
  });

  it('authentication: a rejected key (401, or 400 API_KEY_INVALID) and a missing key (exit 41, stderr only)', () => {
    for (const name of ['auth-401', 'auth-400-key-invalid']) {
      expect(parseAll(name).find((line) => line.failure)?.failure).toMatchObject({ errorCode: 'tool_auth_required' });
      expect(classify(name)).toMatchObject({ errorCode: 'tool_auth_required' });
    }
    expect(exitOf('auth-no-key')).toBe(41);
    expect(classify('auth-no-key')).toMatchObject({ errorCode: 'tool_auth_required', message: expect.stringContaining('GEMINI_API_KEY') });
  });

  it('a daily quota is exhausted; a per-minute limit is a rate limit with the retry time the API suggested', () => {
    expect(classify('quota-daily')).toMatchObject({ errorCode: 'tool_quota_exhausted', message: '[API Error: You have exhausted your daily quota on this model.]' });
    const line = stdoutLines('rate-limit').map((text) => JSON.parse(text) as { type: string; timestamp: string }).find((event) => event.type === 'result')!;
    const failure = parseAll('rate-limit').find((parsed) => parsed.failure)?.failure;
    // "Suggested retry after 1s." from the moment of the result.
    expect(failure).toEqual({ errorCode: 'tool_rate_limited', message: expect.stringContaining('Resource has been exhausted'), retryAt: new Date(Date.parse(line.timestamp) + 1000).toISOString() });
    expect(classify('rate-limit')).toMatchObject({ errorCode: 'tool_rate_limited' });
  });

  it('an empty answer is an error event that names the failure, then an error result (exit 0); an unknown model is a crash naming the API\'s message', () => {
    const parsed = parseAll('empty-response');
    expect(exitOf('empty-response')).toBe(0);
    expect(parsed.find((line) => line.failure)?.failure).toEqual({ errorCode: 'tool_crashed', message: expect.stringContaining('The model returned an empty response') });
    expect(resultOf(parsed)).toEqual({ text: null, isError: true, durationMs: expect.any(Number) });
    expect(classify('model-not-found')).toEqual({ errorCode: 'tool_crashed', message: expect.stringContaining('models/gemini-9 is not found') });
  });

  it('a signal or a missing executable', () => {
    expect(geminiDriver.classify({ exitCode: null, signal: 'SIGKILL', logTail: '', sawResult: false })).toEqual({ errorCode: 'tool_crashed', message: 'Gemini CLI was stopped by SIGKILL' });
    expect(geminiDriver.classify({ exitCode: 127, signal: null, logTail: 'gemini: not found', sawResult: false })).toEqual({ errorCode: 'adapter_unavailable', message: 'Gemini CLI is not installed: npm install -g @google/gemini-cli' });
  });
});

describe('Gemini driver: launching', () => {
  it('runs headless, unattended, with the prompt on stdin and the resume in the arguments; a fresh start when the resume is refused', () => {
    const launch = geminiDriver.launch({ config: config({ extraArgs: ['--include-directories', '/srv/docs'] }), sessionId: 's-1', prompt: 'Do the work', instructions: 'Be brief.', skills: [] });
    expect(launch.args).toEqual(['--output-format', 'stream-json', '--approval-mode', 'yolo', '-m', 'gemini-2.5-flash', '--include-directories', '/srv/docs', '--resume', 's-1', '-p', '']);
    expect(launch.stdin).toBe('Do the work');
    expect(launch.args.join(' ')).not.toContain('Do the work');
    expect(launch.retryFresh?.args).toEqual(['--output-format', 'stream-json', '--approval-mode', 'yolo', '-m', 'gemini-2.5-flash', '--include-directories', '/srv/docs', '-p', '']);
    expect(launch.env).toEqual({ GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_CLI_NO_RELAUNCH: 'true' });
  });

  it('writes its settings, the instructions and the skills into the agent\'s home, replacing skills no longer desired', () => {
    const launch = geminiDriver.launch({
      config: config({ maxTurns: 12, model: null }), sessionId: null, prompt: 'p', instructions: 'Be brief.',
      skills: [{ runtimeName: 'keel-api', files: [{ path: 'SKILL.md', content: '---\nname: keel-api\n---\n' }] }],
    });
    expect(launch.args).toContain('auto');
    expect(launch.retryFresh).toBeNull();
    const settings = JSON.parse(launch.homeFiles.find((file) => file.path === '.gemini/settings.json')!.content) as Record<string, Record<string, unknown>>;
    expect(settings.security.auth).toEqual({ selectedType: 'gemini-api-key' });
    expect(settings.privacy).toEqual({ usageStatisticsEnabled: false });
    expect(settings.telemetry).toEqual({ enabled: false });
    expect(settings.model).toEqual({ maxSessionTurns: 12 });
    expect(launch.homeFiles.filter((file) => file.path !== '.gemini/settings.json')).toEqual([
      { path: '.gemini/GEMINI.md', content: 'Be brief.' },
      { path: '.gemini/skills/keel-api/SKILL.md', content: '---\nname: keel-api\n---\n' },
    ]);
    expect(launch.homeReplace).toEqual(['.gemini/skills', '.gemini/GEMINI.md']);
  });

  it('names Vertex AI when the env asks for it, and keeps the tool\'s own sandbox with network access when toolSandbox is set', () => {
    const launch = geminiDriver.launch({ config: config({ toolSandbox: true, env: { GOOGLE_GENAI_USE_VERTEXAI: 'true', GOOGLE_API_KEY: 'k' } }), sessionId: null, prompt: 'p', instructions: null, skills: [] });
    const settings = JSON.parse(launch.homeFiles[0].content) as Record<string, Record<string, unknown>>;
    expect(settings.security).toMatchObject({ auth: { selectedType: 'vertex-ai' }, toolSandboxing: true });
    expect(settings.tools).toEqual({ sandboxNetworkAccess: true });
  });

  it('runs the CLI\'s own default model for the kernel\'s gamma-default placeholder', () => {
    const launch = geminiDriver.launch({ config: config({ model: 'gamma-default' }), sessionId: null, prompt: 'p', instructions: null, skills: [] });
    expect(launch.args.slice(4, 6)).toEqual(['-m', 'auto']);
  });

  it('reads the version the CLI prints', () => {
    expect(geminiDriver.parseVersion('0.61.0\n')).toBe('0.61.0');
    expect(geminiDriver.parseVersion('nothing')).toBeNull();
  });
});
