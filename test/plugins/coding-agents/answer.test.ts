import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultText, withAnswer } from '../../../plugins/coding-agents/src/answer.ts';
import { geminiDriver } from '../../../plugins/coding-agents/src/tools/gemini.ts';

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
