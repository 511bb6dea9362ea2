import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codexDriver } from '../../../plugins/coding-agents/src/tools/codex.ts';
import { resetTime } from '../../../plugins/coding-agents/src/tools/codex-events.ts';
import type { LocalConfig, ParsedLine } from '../../../plugins/coding-agents/src/tools/driver.ts';

/** The parser and classifier read the real output of Codex 0.171.0 (captured by test/fixtures/coding-agents/codex/capture.ts). */
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'codex');
const captures = JSON.parse(readFileSync(join(FIXTURES, 'captures.json'), 'utf8')) as { captures: Record<string, { exitCode: number }> };
const stdoutLines = (name: string) => readFileSync(join(FIXTURES, `${name}.stdout.jsonl`), 'utf8').split('\n').filter(Boolean);
const logTail = (name: string) => `${readFileSync(join(FIXTURES, `${name}.stdout.jsonl`), 'utf8')}${readFileSync(join(FIXTURES, `${name}.stderr.txt`), 'utf8')}`;

const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'codex', cwd: null, model: 'scripted-model', extraArgs: [], effort: null, maxTurns: null, toolSandbox: false,
  timeoutSec: 600, graceSec: 5, env: { CODEX_API_KEY: { type: 'secret_ref', secretId: 's1' } }, ...overrides,
});

function parseAll(name: string, local = config()): ParsedLine[] {
  const parser = codexDriver.parser(local);
  return stdoutLines(name).map((line) => parser.line(JSON.parse(line) as Record<string, unknown>));
}

function classify(name: string) {
  return codexDriver.classify({ exitCode: captures.captures[name]!.exitCode, signal: null, logTail: logTail(name), sawResult: false });
}

describe('Codex driver: reading codex exec --json', () => {
  it('turns a fresh run into init, thinking, the shell call and its result, the answer, and thread-cumulative usage split into cached and uncached', () => {
    const parsed = parseAll('fresh-run');
    const threadId = (JSON.parse(stdoutLines('fresh-run')[0]!) as { thread_id: string }).thread_id;
    expect(parsed.find((line) => line.sessionId)?.sessionId).toBe(threadId);
    expect(parsed.flatMap((line) => line.transcript ?? [])).toEqual([
      { kind: 'init', sessionId: threadId, model: 'scripted-model' },
      { kind: 'system', message: 'Model metadata for `scripted-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.' },
      { kind: 'thinking', text: 'I should look at the issue first.' },
      { kind: 'tool_call', id: 'item_2', name: 'shell', input: { command: "/usr/bin/bash -lc 'echo checked-the-issue'" } },
      { kind: 'tool_result', id: 'item_2', output: 'checked-the-issue\n', isError: false },
      { kind: 'assistant', text: 'Done: commented and closed.' },
    ]);
    // Scripted: 1200 in (200 cached) + 1500 in (1000 cached), 30 + 40 out.
    expect(parsed.filter((line) => line.usage).map((line) => line.usage)).toEqual([{
      provider: 'openai', model: 'scripted-model', billingType: 'metered_api', inputTokens: 1500, cachedInputTokens: 1200, outputTokens: 70, cumulative: true,
    }]);
    expect(parsed.filter((line) => line.result).at(-1)?.result).toEqual({ text: 'Done: commented and closed.', isError: false });
    expect(parsed.some((line) => line.failure)).toBe(false);
    expect(classify('fresh-run')).toBeNull();
  });

  it('reads a resumed thread\'s usage as the total of the thread, earlier runs included (the core meters the difference)', () => {
    const usage = parseAll('resumed-run').find((line) => line.usage)?.usage;
    // The earlier run's 2700/1200/70 plus this run's 2000 in (1500 cached) and 20 out.
    expect(usage).toMatchObject({ inputTokens: 4700 - 2700, cachedInputTokens: 2700, outputTokens: 90, cumulative: true });
    expect(classify('resumed-run')).toBeNull();
  });

  it('names the configured model and calls usage without an API key in the env of unknown billing (a ChatGPT login is a subscription)', () => {
    const usage = parseAll('fresh-run', config({ model: 'gpt-5.5', env: {} })).find((line) => line.usage)?.usage;
    expect(usage).toMatchObject({ model: 'gpt-5.5', billingType: 'unknown' });
  });

  it('keeps a line it does not know as a log line, and an unknown item type too', () => {
    const parser = codexDriver.parser(config());
    expect(parser.line({ type: 'thread.archived', thread_id: 'x' })).toEqual({ transcript: [{ kind: 'log', line: '{"type":"thread.archived","thread_id":"x"}' }] });
    expect(parser.line({ type: 'item.completed', item: { id: 'i', type: 'collab_tool_call', tool: 'spawn_agent' } }).transcript?.[0]?.kind).toBe('log');
  });

  it('cuts a long shell output to 8 KiB', () => {
    const parser = codexDriver.parser(config());
    const entry = parser.line({ type: 'item.completed', item: { id: 'i', type: 'command_execution', command: 'x', aggregated_output: 'é'.repeat(10_000), exit_code: 1, status: 'failed' } }).transcript?.[0];
    expect(entry).toMatchObject({ kind: 'tool_result', isError: true });
    expect((entry as { output: string }).output.length).toBeLessThan(4_200);
    expect((entry as { output: string }).output.endsWith('[cut at 8 KiB]')).toBe(true);
  });

  it('does not fail a run for the retry notices and warnings Codex prints as errors', () => {
    const parsed = parseAll('rate-limited-429');
    const notices = parsed.flatMap((line) => line.transcript ?? []).filter((entry) => entry.kind === 'system');
    expect(notices.filter((entry) => 'message' in entry && entry.message.startsWith('Reconnecting... '))).toHaveLength(5);
    expect(parsed.filter((line) => line.failure)).toHaveLength(1);
  });
});

describe('Codex driver: classifying failures from the real output', () => {
  it('401: authentication required, saying how to give a credential', () => {
    expect(classify('auth-401')).toMatchObject({ errorCode: 'tool_auth_required', message: expect.stringContaining('CODEX_API_KEY') });
    expect(classify('missing-api-key')).toMatchObject({ errorCode: 'tool_auth_required', message: expect.stringContaining('SCRIPTED_API_KEY') });
  });

  it('429 and a usage limit: rate limited, with the reset time Codex names', () => {
    expect(classify('rate-limited-429')).toMatchObject({ errorCode: 'tool_rate_limited', retryAt: null });
    // The scripted resets_at 1796300000 is 2026-12-03T12:13:20Z; Codex prints it to the minute.
    expect(classify('usage-limit')).toMatchObject({ errorCode: 'tool_rate_limited', retryAt: '2026-12-03T12:13:00.000Z' });
    expect(resetTime('You’ve hit your usage limit. try again at 8:13 AM.', new Date('2026-11-29T06:00:00Z'))).toBe('2026-11-29T08:13:00.000Z');
    expect(resetTime('try again at 8:13 AM.', new Date('2026-11-29T09:00:00Z'))).toBe('2026-11-30T08:13:00.000Z');
    expect(resetTime('Please try again in 20s.', new Date('2026-11-29T09:00:00Z'))).toBe('2026-11-29T09:00:20.000Z');
  });

  it('an exhausted quota', () => {
    expect(classify('quota-exhausted')).toMatchObject({ errorCode: 'tool_quota_exhausted' });
  });

  it('an unknown thread: the resume refusal on stderr, before any event', () => {
    expect(stdoutLines('unknown-thread')).toEqual([]);
    expect(classify('unknown-thread')).toMatchObject({ errorCode: 'tool_session_unknown' });
  });

  it('a crash: a signal, or a failed exit that printed no reason', () => {
    expect(codexDriver.classify({ exitCode: null, signal: 'SIGKILL', logTail: '', sawResult: false })).toMatchObject({ errorCode: 'tool_crashed', message: expect.stringContaining('SIGKILL') });
    expect(codexDriver.classify({ exitCode: 101, signal: null, logTail: 'thread main panicked', sawResult: false })).toMatchObject({ errorCode: 'tool_crashed' });
  });
});

describe('Codex driver: launching', () => {
  const input = { prompt: 'Work on ISS-1', instructions: 'Be brief.', skills: [{ runtimeName: 'keel', files: [{ path: 'SKILL.md', content: '---\nname: keel\n---\n' }] }] };

  it('starts codex exec unattended, prompt on stdin, instructions and skills where Codex reads them', () => {
    const launch = codexDriver.launch({ ...input, config: config({ effort: 'high' }), sessionId: null });
    expect(launch.args).toEqual([
      'exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '-m', 'scripted-model',
      '-c', 'model_reasoning_effort="high"', '-c', 'shell_environment_policy.inherit="all"', '-c', 'shell_environment_policy.ignore_default_excludes=true', '-',
    ]);
    expect(launch.args.join(' ')).not.toContain('ISS-1');
    expect(launch.stdin).toBe('Work on ISS-1');
    expect(launch.homeVariables).toEqual({ CODEX_HOME: '.codex' });
    expect(launch.homeFiles).toEqual([{ path: '.codex/AGENTS.md', content: 'Be brief.' }, { path: '.agents/skills/keel/SKILL.md', content: '---\nname: keel\n---\n' }]);
    expect(launch.homeReplace).toEqual(['.agents/skills', '.codex/AGENTS.md']);
    expect(launch.retryFresh).toBeNull();
  });

  it('resumes a thread with exec resume, and retries fresh when Codex refuses it', () => {
    const launch = codexDriver.launch({ ...input, config: config(), sessionId: '01a2260b-4657-7801-9ce4-85af80194de9' });
    expect(launch.args.slice(0, 2)).toEqual(['exec', 'resume']);
    expect(launch.args.slice(-2)).toEqual(['01a2260b-4657-7801-9ce4-85af80194de9', '-']);
    expect(launch.retryFresh?.args).toEqual(codexDriver.launch({ ...input, config: config(), sessionId: null }).args);
    const refusal = readFileSync(join(FIXTURES, 'unknown-thread.stderr.txt'), 'utf8');
    expect(launch.retryFresh?.ifOutputIncludes.some((needle) => refusal.includes(needle))).toBe(true);
  });

  it('never passes a session id that would read as a flag: the run starts a fresh thread', () => {
    const launch = codexDriver.launch({ ...input, config: config(), sessionId: '--dangerously-bypass-hook-trust' });
    expect(launch.args).toEqual(codexDriver.launch({ ...input, config: config(), sessionId: null }).args);
    expect(launch.retryFresh).toBeNull();
  });

  it('keeps Codex\'s workspace sandbox with network access when toolSandbox is set', () => {
    const args = codexDriver.launch({ ...input, config: config({ toolSandbox: true }), sessionId: null }).args;
    expect(args).not.toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(args.join(' ')).toContain('-c sandbox_mode="workspace-write" -c approval_policy="never" -c sandbox_workspace_write.network_access=true');
  });

  it('declares a provider for OPENAI_BASE_URL and OPENAI_API_KEY, which Codex itself ignores', () => {
    const args = codexDriver.launch({ ...input, config: config({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: { type: 'secret_ref', secretId: 's' } } }), sessionId: null }).args.join(' ');
    expect(args).toContain('-c model_provider="keel_openai"');
    expect(args).toContain('-c model_providers.keel_openai.base_url="http://127.0.0.1:9/v1"');
    expect(args).toContain('-c model_providers.keel_openai.env_key="OPENAI_API_KEY"');
    expect(args).not.toContain('secret');
  });

  it('runs Codex\'s own default model for the placeholder the kernel fills in on create', () => {
    const args = codexDriver.launch({ ...input, config: config({ model: 'beta-default' }), sessionId: null }).args;
    expect(args.slice(args.indexOf('-m'), args.indexOf('-m') + 2)).toEqual(['-m', codexDriver.defaultModel]);
  });

  it('reads its version and probes with one ephemeral call', () => {
    expect(codexDriver.parseVersion('codex-cli 0.171.0\n')).toBe('0.171.0');
    const probe = codexDriver.probe(config());
    expect(probe.args).toContain('--ephemeral');
    expect(probe.args.at(-1)).toBe('-');
  });
});
