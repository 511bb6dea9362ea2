import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultText, withAnswer, withResultText } from '../../../plugins/coding-agents/src/answer.ts';
import { geminiDriver } from '../../../plugins/coding-agents/src/tools/gemini.ts';
import { opencodeDriver } from '../../../plugins/coding-agents/src/tools/opencode.ts';
import { capturedRun } from './fixture-lines.ts';

/**
 * The answer a run reports when its tool's result event carries no text (Gemini CLI): collected
 * by the core across the batches of output lines, each parsed by a fresh parser. Read on the real
 * output of Gemini CLI 0.61.0 (test/fixtures/coding-agents/gemini/), split at every point.
 */
const lines = (name: string) => readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'coding-agents', 'gemini', `${name}.stdout.jsonl`), 'utf8')
  .split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

function resultAfterBatches(batches: Array<Array<Record<string, unknown>>>) {
  let kept: Record<string, unknown> | null = null;
  for (const batch of batches) {
    const parser = geminiDriver.parser();
    for (const data of batch) kept = withAnswer(kept, parser.line(data));
  }
  return { text: resultText(kept), isError: kept?.isError };
}

describe('the answer of a run whose result event has no text', () => {
  it('is the text after the last tool call, wherever the batches of output split (the shell call, then an answer streamed in two chunks)', () => {
    const all = lines('shell');
    for (let split = 0; split <= all.length; split += 1) {
      expect(resultAfterBatches([all.slice(0, split), all.slice(split)]), `split at ${split}`).toEqual({ text: 'The shell said hello.', isError: false });
    }
    expect(resultAfterBatches(all.map((line) => [line]))).toEqual({ text: 'The shell said hello.', isError: false });
  });

  it('leaves a result\'s own text alone', () => {
    const kept = withAnswer(withAnswer(null, { transcript: [{ kind: 'assistant', text: 'thinking aloud' }] }), { result: { text: 'the final word', isError: false } });
    expect(resultText(kept)).toBe('the final word');
  });

  it('is null when the tool said nothing', () => {
    expect(resultText(withAnswer(null, { result: { text: null, isError: true } }))).toBeNull();
  });
});

describe('the transcript\'s result entry', () => {
  it('carries the run\'s text wherever the batches split, also when the result event came apart from the answer (OpenCode)', () => {
    const all = capturedRun('opencode', 'fresh-run').events;
    for (let split = 0; split <= all.length; split += 1) {
      let kept: Record<string, unknown> | null = null;
      const results = [];
      for (const batch of [all.slice(0, split), all.slice(split)]) {
        const parser = opencodeDriver.parser();
        for (const data of batch) {
          const parsed = parser.line(data);
          kept = withAnswer(kept, parsed);
          results.push(...withResultText(parsed.transcript ?? [], kept).filter((entry) => entry.kind === 'result'));
        }
      }
      expect(results, `split at ${split}`).toEqual([{ kind: 'result', text: 'Done: the shell said hello.' }]);
    }
  });

  it('stays without text when the run said nothing', () => {
    expect(withResultText([{ kind: 'result' }], withAnswer(null, { result: { text: null, isError: true } }))).toEqual([{ kind: 'result' }]);
  });
});
