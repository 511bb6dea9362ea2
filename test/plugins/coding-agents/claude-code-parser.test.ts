import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeCode } from '../../../plugins/coding-agents/src/tools/claude-code.ts';
import type { LocalConfig, ParsedLine } from '../../../plugins/coding-agents/src/tools/driver.ts';

/**
 * The alpha_local driver against the REAL output of Claude Code 2.1.332, captured by
 * test/fixtures/coding-agents/claude-code/capture.ts from runs against the scripted model.
 */
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'claude-code');
const scenarios = JSON.parse(readFileSync(join(FIXTURES, 'scenarios.json'), 'utf8')) as { runs: Array<{ name: string; exitCode: number }> };

function fixture(name: string): string { return readFileSync(join(FIXTURES, name), 'utf8'); }
function lines(name: string): Array<Record<string, unknown>> {
  return fixture(`${name}.jsonl`).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Record<string, unknown>);
}
function parse(name: string): ParsedLine[] {
  const parser = claudeCode.parser();
  return lines(name).map((line) => parser.line(line));
}
function entries(parsed: ParsedLine[]) { return parsed.flatMap((p) => p.transcript ?? []); }
function last<T>(parsed: ParsedLine[], pick: (p: ParsedLine) => T | undefined): T | undefined {
  return parsed.map(pick).filter((v) => v !== undefined).at(-1);
}
function classify(name: string) {
  const run = scenarios.runs.find((r) => r.name === name)!;
  let tail = '';
  try { tail += fixture(`${name}.jsonl`); } catch { /* no stdout */ }
  try { tail += fixture(`${name}.stderr.txt`); } catch { /* no stderr */ }
  return claudeCode.classify({ exitCode: run.exitCode, signal: null, logTail: tail, sawResult: tail.includes('"type":"result"') });
}

describe('alpha_local parser: the stream of a successful run', () => {
  it('reads init, the answer and the result; usage from the result splits the cache out of the input', () => {
    const parsed = parse('text');
    const sessionId = (lines('text')[0] as { session_id: string }).session_id;
    expect(entries(parsed)).toEqual([
      { kind: 'init', sessionId, model: 'claude-opus-5-5', version: '2.1.332', tools: expect.arrayContaining(['Bash', 'Read', 'Edit']) },
      { kind: 'assistant', text: 'Hello from the scripted model.' },
      { kind: 'result', isError: false, text: 'Hello from the scripted model.', turns: 1, durationMs: expect.any(Number) },
    ]);
    expect(last(parsed, (p) => p.sessionId)).toBe(sessionId);
    expect(last(parsed, (p) => p.result)).toEqual({ text: 'Hello from the scripted model.', isError: false, subtype: 'success', turns: 1, durationMs: expect.any(Number) });
    // Scripted: input 120, cache reads 40, cache writes 5, output 9 (the assistant event's own usage says output 1: the stream's start figure).
    expect(last(parsed, (p) => p.usage)).toEqual({
      provider: 'anthropic', model: 'claude-opus-5-5', billingType: 'metered_api',
      inputTokens: 120, cachedInputTokens: 40, cacheWriteTokens: 5, outputTokens: 9, costUsd: expect.closeTo(0.000693, 9),
    });
    expect(parsed.some((p) => p.failure)).toBe(false);
    expect(classify('text')).toBeNull();
  });

  it('a resumed run keeps the session id of the run it resumes', () => {
    const first = last(parse('text'), (p) => p.sessionId);
    const parsed = parse('resumed');
    expect(last(parsed, (p) => p.sessionId)).toBe(first);
    expect(entries(parsed).filter((e) => e.kind === 'assistant')).toEqual([{ kind: 'assistant', text: 'Second answer, same session.' }]);
    expect(last(parsed, (p) => p.usage)).toMatchObject({ inputTokens: 30, cachedInputTokens: 150, outputTokens: 6 });
  });

  it('a Bash call becomes a tool call with its input and a tool result; usage sums both model calls', () => {
    const parsed = parse('bash-tool');
    const kinds = entries(parsed).map((e) => e.kind);
    expect(kinds).toEqual(['init', 'assistant', 'tool_call', 'tool_result', 'assistant', 'result']);
    const call = entries(parsed).find((e) => e.kind === 'tool_call');
    const result = entries(parsed).find((e) => e.kind === 'tool_result');
    expect(call).toEqual({ kind: 'tool_call', id: expect.stringMatching(/^toolu_/), name: 'Bash', input: { command: 'echo hello-from-bash && id -un', description: 'Run a command' } });
    expect(result).toEqual({ kind: 'tool_result', id: (call as { id: string }).id, output: 'hello-from-bash\nkeel-agent' });
    // 200 + 300 uncached, 100 + 150 cache reads, 30 + 15 output.
    expect(last(parsed, (p) => p.usage)).toMatchObject({ inputTokens: 500, cachedInputTokens: 250, cacheWriteTokens: 0, outputTokens: 45 });
  });

  it('a failing command is a tool result marked as an error, and the run still succeeds', () => {
    const parsed = parse('bash-error');
    expect(entries(parsed).find((e) => e.kind === 'tool_result')).toMatchObject({ output: 'Exit code 3\noops', isError: true });
    expect(last(parsed, (p) => p.result)?.isError).toBe(false);
    expect(classify('bash-error')).toBeNull();
  });

  it('thinking is its own entry; the thinking-token progress lines add nothing', () => {
    const parsed = parse('thinking');
    expect(entries(parsed).filter((e) => e.kind === 'thinking' || e.kind === 'assistant')).toEqual([
      { kind: 'thinking', text: 'Let me think briefly.' }, { kind: 'assistant', text: 'Thought about it.' },
    ]);
    expect(entries(parsed).some((e) => e.kind === 'log')).toBe(false);
  });

  it('a permission the tool denied is said in the transcript', () => {
    const parsed = parse('permission-denied');
    expect(entries(parsed)).toContainEqual({ kind: 'system', message: expect.stringMatching(/^Permission denied for Bash: .*requires approval/) });
    expect(entries(parsed).find((e) => e.kind === 'tool_result')).toMatchObject({ isError: true });
  });

  it('a subscription account: usage is subscription_included and a limit warning is shown', () => {
    const parsed = parse('subscription-warning');
    expect(last(parsed, (p) => p.usage)).toMatchObject({ billingType: 'subscription_included', model: 'claude-sonnet-5-5', inputTokens: 10, outputTokens: 2 });
    expect(entries(parsed)).toContainEqual({ kind: 'system', message: 'Claude subscription limit allowed_warning (five_hour), resets at 2026-11-30T08:00:00.000Z' });
  });

  it('each line reads the same alone as in its run (the core hands a fresh parser to each batch); only the billing kind needs the init', () => {
    for (const name of ['text', 'bash-tool', 'max-turns', 'usage-limit', 'auth-invalid-key', 'credit-too-low']) {
      const alone = lines(name).map((line) => claudeCode.parser().line(line));
      const strip = (p: ParsedLine) => (p.usage ? { ...p, usage: { ...p.usage, billingType: 'x', model: 'x' } } : p);
      expect(alone.map(strip), name).toEqual(parse(name).map(strip));
    }
    expect(last(lines('text').map((line) => claudeCode.parser().line(line)), (p) => p.usage)).toMatchObject({ billingType: 'unknown', model: 'claude-opus-5-5' });
  });

  it('a line it does not know is kept as a log line', () => {
    const parsed = claudeCode.parser().line({ type: 'something_new', detail: 1 });
    expect(parsed).toEqual({ transcript: [{ kind: 'log', line: '{"type":"something_new","detail":1}' }] });
    expect(claudeCode.parser().line({ type: 'system', subtype: 'brand_new' }).transcript).toEqual([{ kind: 'log', line: '{"type":"system","subtype":"brand_new"}' }]);
  });

  it('a tool result is cut to 8 KiB', () => {
    const parsed = claudeCode.parser().line({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'é'.repeat(10_000) }] } });
    const output = (parsed.transcript![0] as { output: string }).output;
    const marker = '\n[cut at 8 KiB]';
    expect(output.endsWith(marker)).toBe(true);
    expect(Buffer.byteLength(output.slice(0, -marker.length), 'utf8')).toBe(8 * 1024);
  });
});

describe('alpha_local parser and classifier: failures', () => {
  it('an unknown session: the result says so, no session is kept, and only the end names the failure (a fresh retry may still succeed)', () => {
    const parsed = parse('resume-unknown');
    expect(parsed.some((p) => p.sessionId)).toBe(false);
    expect(parsed.some((p) => p.failure)).toBe(false);
    expect(entries(parsed)).toContainEqual({ kind: 'error', message: 'No conversation found with session ID: 11111111-2222-3333-4444-555555555555' });
    expect(classify('resume-unknown')).toEqual({ errorCode: 'tool_session_unknown', message: 'No conversation found with session ID: 11111111-2222-3333-4444-555555555555' });
  });

  it('max turns', () => {
    expect(last(parse('max-turns'), (p) => p.failure)).toEqual({ errorCode: 'tool_max_turns', message: 'Claude Code stopped at its turn limit: Reached maximum number of turns (2)' });
    expect(last(parse('max-turns'), (p) => p.usage)).toMatchObject({ inputTokens: 20, outputTokens: 6 });
    expect(classify('max-turns')).toMatchObject({ errorCode: 'tool_max_turns', message: 'Reached maximum number of turns (2)' });
  });

  it.each(['auth-invalid-key', 'auth-missing'])('%s: authentication required, naming the variables that fix it', (name) => {
    const parsed = parse(name);
    expect(last(parsed, (p) => p.failure)).toMatchObject({ errorCode: 'tool_auth_required', message: expect.stringContaining('CLAUDE_CODE_OAUTH_TOKEN') });
    expect(entries(parsed).filter((e) => e.kind === 'error')).toHaveLength(1);
    expect(parsed.some((p) => p.usage)).toBe(false); // nothing was spent
    expect(classify(name)).toMatchObject({ errorCode: 'tool_auth_required' });
  });

  it('429 with an API key: rate limited, the retries shown', () => {
    const parsed = parse('rate-limited');
    expect(entries(parsed)).toContainEqual({ kind: 'system', message: expect.stringMatching(/^Model API error 429 \(rate_limit\); retry 1 of 1 in \d/) });
    expect(last(parsed, (p) => p.failure)).toEqual({ errorCode: 'tool_rate_limited', message: expect.stringContaining('429'), retryAt: null });
    expect(classify('rate-limited')).toMatchObject({ errorCode: 'tool_rate_limited' });
  });

  it('a subscription\'s usage limit: rate limited until the reset time it gives', () => {
    const parsed = parse('usage-limit');
    expect(last(parsed, (p) => p.failure)).toEqual({ errorCode: 'tool_rate_limited', message: expect.stringContaining('5-hour limit'), retryAt: '2026-11-30T08:00:00.000Z' });
    expect(classify('usage-limit')).toEqual({ errorCode: 'tool_rate_limited', message: expect.any(String), retryAt: '2026-11-30T08:00:00.000Z' });
  });

  it('529 overloaded is a rate limit without a time; a 500 is the tool failing with the API\'s words', () => {
    expect(last(parse('overloaded'), (p) => p.failure)).toMatchObject({ errorCode: 'tool_rate_limited', message: expect.stringContaining('529 Overloaded') });
    expect(last(parse('server-error'), (p) => p.failure)).toMatchObject({ errorCode: 'tool_crashed', message: expect.stringContaining('500 Internal server error') });
    expect(classify('server-error')).toMatchObject({ errorCode: 'tool_crashed' });
  });

  it('no credit left: quota exhausted', () => {
    expect(last(parse('credit-too-low'), (p) => p.failure)).toMatchObject({ errorCode: 'tool_quota_exhausted', message: expect.stringContaining('Credit balance is too low') });
    expect(classify('credit-too-low')).toMatchObject({ errorCode: 'tool_quota_exhausted' });
  });

  it('the permission bypass refused as root says how to fix it', () => {
    expect(classify('root-refusal')).toMatchObject({ errorCode: 'tool_crashed', message: expect.stringContaining('IS_SANDBOX=1') });
  });

  it('a run stopped mid-command: the call and its killed result, no result, and the stop named', () => {
    const parsed = parse('cancelled');
    expect(entries(parsed).map((e) => e.kind)).toEqual(['init', 'tool_call', 'tool_result']);
    expect(entries(parsed)[2]).toMatchObject({ output: 'Exit code 137', isError: true });
    expect(parsed.some((p) => p.usage || p.result)).toBe(false);
    expect(classify('cancelled')).toEqual({ errorCode: 'tool_crashed', message: 'Claude Code was stopped by SIGTERM before it reported a result.' });
  });

  it('a missing executable, a kill and an exit without a result', () => {
    expect(claudeCode.classify({ exitCode: 127, signal: null, logTail: '', sawResult: false })).toMatchObject({ errorCode: 'adapter_unavailable', message: expect.stringContaining('npm install -g @anthropic-ai/claude-code') });
    expect(claudeCode.classify({ exitCode: null, signal: 'SIGKILL', logTail: fixture('text.jsonl').split('\n')[0], sawResult: false })).toMatchObject({ errorCode: 'tool_crashed', message: expect.stringContaining('SIGKILL') });
    expect(claudeCode.classify({ exitCode: 0, signal: null, logTail: 'hello', sawResult: false })).toMatchObject({ errorCode: 'tool_output_malformed' });
  });
});

describe('alpha_local launch', () => {
  const config: LocalConfig = {
    command: 'claude', cwd: null, model: 'claude-sonnet-4-5', extraArgs: ['--add-dir', '/srv/shared'], effort: 'high', maxTurns: 30,
    toolSandbox: false, timeoutSec: 600, graceSec: 15, env: {},
  };

  it('runs unattended with the prompt on stdin; resumes with a fresh start as the retry for a refused resume', () => {
    const launch = claudeCode.launch({ config, sessionId: 'abc', prompt: 'Do the thing', instructions: '# Be brief', skills: [] });
    expect(launch.args).toEqual(['-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--resume', 'abc', '--model', 'claude-sonnet-4-5', '--effort', 'high', '--max-turns', '30', '--add-dir', '/srv/shared']);
    expect(launch.args.join(' ')).not.toContain('Do the thing');
    expect(launch.stdin).toBe('Do the thing');
    expect(launch.retryFresh).toEqual({ args: launch.args.filter((a) => a !== '--resume' && a !== 'abc'), ifOutputIncludes: ['No conversation found with session ID'] });
    expect(launch.env).toEqual({ CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' });
    expect(launch.homeVariables).toEqual({ CLAUDE_CONFIG_DIR: '.claude' });
  });

  it('writes the instructions as the user-level CLAUDE.md and the skills where Claude Code discovers them', () => {
    const launch = claudeCode.launch({
      config: { ...config, toolSandbox: true }, sessionId: null, prompt: 'p', instructions: null,
      skills: [{ runtimeName: 'keel-issues', files: [{ path: 'SKILL.md', content: '---\nname: keel-issues\n---\n' }, { path: 'tools/x.bin', content: 'AA==', encoding: 'base64' }] }],
    });
    expect(launch.args).toContain('--permission-mode');
    expect(launch.args).not.toContain('--dangerously-skip-permissions');
    expect(launch.retryFresh).toBeNull();
    expect(launch.homeFiles).toEqual([
      { path: '.claude/CLAUDE.md', content: '' },
      { path: '.claude/skills/keel-issues/SKILL.md', content: '---\nname: keel-issues\n---\n' },
      { path: '.claude/skills/keel-issues/tools/x.bin', content: 'AA==', encoding: 'base64' },
    ]);
    expect(launch.homeReplace).toEqual(['.claude/skills']);
  });

  it('reads the version it prints', () => {
    expect(claudeCode.parseVersion(fixture('version.txt'))).toBe('2.1.332');
    expect(claudeCode.parseVersion('garbage')).toBeNull();
  });
});
