import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cursorDriver } from '../../../plugins/coding-agents/src/tools/cursor.ts';
import type { LocalConfig, ParsedLine } from '../../../plugins/coding-agents/src/tools/driver.ts';

/**
 * The Cursor driver reads lines from Cursor's DOCUMENTATION (and one usage line in the shape
 * users report), not captured output: the tool cannot be installed here. See
 * test/fixtures/coding-agents/cursor/README.md.
 */
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'cursor');
const lines = (name: string) => readFileSync(join(FIXTURES, `${name}.stdout.jsonl`), 'utf8').split('\n').filter(Boolean);

const config = (overrides: Partial<LocalConfig> = {}): LocalConfig => ({
  command: 'cursor-agent', cwd: null, model: null, extraArgs: [], effort: null, maxTurns: null, toolSandbox: false,
  timeoutSec: 600, graceSec: 5, env: { CURSOR_API_KEY: { type: 'secret_ref', secretId: 's1' } }, ...overrides,
});

function parseAll(name: string, local = config()): ParsedLine[] {
  const parser = cursorDriver.parser(local);
  return lines(name).map((line) => parser.line(JSON.parse(line) as Record<string, unknown>));
}

describe('Cursor driver: reading the documented stream-json example', () => {
  const SESSION = 'c6b62c6f-7ead-4fd6-9922-e952131177ff';

  it('turns the documented sequence into init, the messages, the read and write calls with their results, and the result', () => {
    const parsed = parseAll('documented-example');
    expect(parsed.find((line) => line.sessionId)?.sessionId).toBe(SESSION);
    expect(parsed.flatMap((line) => line.transcript ?? [])).toEqual([
      { kind: 'init', sessionId: SESSION, model: 'Claude 4 Sonnet' },
      { kind: 'assistant', text: 'I\'ll read the README.md file' },
      { kind: 'tool_call', id: 'toolu_vrtx_01NnjaR886UcE8whekg2MGJd', name: 'read', input: { path: 'README.md' } },
      { kind: 'tool_result', id: 'toolu_vrtx_01NnjaR886UcE8whekg2MGJd', output: '# Project\n\nThis is a sample project...' },
      { kind: 'assistant', text: 'Based on the README, I\'ll create a summary' },
      {
        kind: 'tool_call', id: 'toolu_vrtx_01Q3VHVnWFSKygaRPT7WDxrv', name: 'write',
        input: { path: 'summary.txt', fileText: '# README Summary\n\nThis project contains...', toolCallId: 'toolu_vrtx_01Q3VHVnWFSKygaRPT7WDxrv' },
      },
      { kind: 'tool_result', id: 'toolu_vrtx_01Q3VHVnWFSKygaRPT7WDxrv', output: '{"path":"/Users/user/project/summary.txt","linesCreated":19,"fileSize":942}' },
      { kind: 'assistant', text: 'Done! I\'ve created the summary in summary.txt' },
      { kind: 'result', text: 'I\'ll read the README.md fileBased on the README, I\'ll create a summaryDone! I\'ve created the summary in summary.txt', isError: false, durationMs: 5234 },
    ]);
    expect(parsed.at(-1)?.result).toEqual({ text: expect.stringContaining('Done! I\'ve created the summary'), isError: false, subtype: 'success', durationMs: 5234 });
    // The documented result carries no usage: the run's usage stays unknown.
    expect(parsed.some((line) => line.usage)).toBe(false);
    expect(parsed.some((line) => line.failure)).toBe(false);
  });

  it('reads usage in the reported shape: inputTokens is the uncached input, cacheReadTokens the cached part, named after the configured model', () => {
    const [parsed] = parseAll('reported-usage', config({ model: 'composer-2.5' }));
    expect(parsed.usage).toEqual({
      provider: 'cursor', model: 'composer-2.5', billingType: 'subscription_included',
      inputTokens: 229382, cachedInputTokens: 2158080, cacheWriteTokens: 0, outputTokens: 10147,
    });
    expect(parsed.sessionId).toBe('7a9963b5-a319-41aa-938f-8a1f9171c3d8');
  });

  it('keeps thinking deltas, and keeps an unknown event as a log line', () => {
    const parser = cursorDriver.parser(config());
    expect(parser.line({ type: 'thinking', subtype: 'delta', text: 'hmm' })).toEqual({ transcript: [{ kind: 'thinking', text: 'hmm' }] });
    expect(parser.line({ type: 'new_kind', x: 1 })).toEqual({ transcript: [{ kind: 'log', line: '{"type":"new_kind","x":1}' }] });
  });
});

describe('Cursor driver: launching and failures', () => {
  it('runs print mode with stream-json, unattended and trusted, the prompt (after the instructions) on stdin, the resume as one argument', () => {
    const launch = cursorDriver.launch({
      config: config({ extraArgs: ['--mode', 'plan'] }), sessionId: 'chat-1', prompt: 'Do the work', instructions: 'Be brief.',
      skills: [{ runtimeName: 'keel-api', files: [{ path: 'SKILL.md', content: 'x' }] }],
    });
    expect(launch.args).toEqual(['-p', '--output-format', 'stream-json', '--force', '--trust', '--model', 'auto', '--mode', 'plan', '--resume=chat-1']);
    expect(launch.stdin).toBe('<agent-instructions>\nBe brief.\n</agent-instructions>\n\nDo the work');
    expect(launch.args.join(' ')).not.toContain('Do the work');
    expect(launch.retryFresh?.args).toEqual(['-p', '--output-format', 'stream-json', '--force', '--trust', '--model', 'auto', '--mode', 'plan']);
    expect(launch.homeFiles).toEqual([{ path: '.cursor/skills/keel-api/SKILL.md', content: 'x' }]);
    expect(launch.homeReplace).toEqual(['.cursor/skills']);
    expect(cursorDriver.launch({ config: config({ toolSandbox: true }), sessionId: null, prompt: 'p', instructions: null, skills: [] }).args).toContain('enabled');
  });

  it('classifies a login the CLI asks for, a refused resume, a missing executable and a crash', () => {
    const classify = (exitCode: number | null, logTail: string, signal: string | null = null) => cursorDriver.classify({ exitCode, signal, logTail, sawResult: false });
    expect(classify(1, 'Authentication required. Please run \'agent login\' first, or set CURSOR_API_KEY.')).toMatchObject({ errorCode: 'tool_auth_required' });
    expect(classify(1, 'Error: Chat not found: chat-1')).toMatchObject({ errorCode: 'tool_session_unknown' });
    expect(classify(127, '')).toEqual({ errorCode: 'adapter_unavailable', message: 'Cursor\'s agent CLI is not installed: curl https://cursor.com/install -fsS | bash' });
    expect(classify(null, '', 'SIGKILL')).toEqual({ errorCode: 'tool_crashed', message: 'cursor-agent was stopped by SIGKILL' });
    expect(classify(0, '')).toBeNull();
  });

  it('reads the version the CLI prints', () => {
    expect(cursorDriver.parseVersion('2026.09.02-c22c1a3\n')).toBe('2026.09.02-c22c1a3');
  });
});
