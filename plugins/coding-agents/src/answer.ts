import type { Row } from './context.ts';
import type { ParsedLine, TranscriptEntry } from './tools/driver.ts';

/** How much of the answer a run keeps for its result (the transcript and the log keep all of it). */
const MAX_ANSWER_CHARS = 65_536;

/**
 * The run's kept result after one parsed line, with the assistant's answer so far: the text of
 * the assistant entries since the last tool call. Some tools end with a result event that
 * carries no text (Gemini CLI's `result` has only status and stats) and stream their answer in
 * chunks, which may come in other batches than the result; the drivers parse each batch on its
 * own, so the answer is collected here, across batches, and is the result's text when the
 * result names none.
 */
export function withAnswer(kept: unknown, parsed: ParsedLine): Record<string, unknown> | null {
  let result = kept && typeof kept === 'object' ? { ...(kept as Record<string, unknown>) } : null;
  for (const entry of parsed.transcript ?? []) {
    if (entry.kind === 'tool_call') result = { ...result, answer: '' };
    if (entry.kind === 'assistant') result = { ...result, answer: `${typeof result?.answer === 'string' ? result.answer : ''}${entry.text}`.slice(-MAX_ANSWER_CHARS) };
  }
  if (parsed.result) result = { ...parsed.result, answer: result?.answer ?? null };
  return result;
}

/** The text of the run's result: the result's own, else the answer collected. */
export function resultText(kept: Row | null): string | null {
  if (!kept) return null;
  if (typeof kept.text === 'string') return kept.text;
  return typeof kept.answer === 'string' && kept.answer !== '' ? kept.answer : null;
}

/**
 * A line's transcript with its result entry given the run's text when the line names none (a
 * result event that came in another batch than the answer): the transcript's result says what
 * the run's result says.
 */
export function withResultText(entries: TranscriptEntry[], kept: Row | null): TranscriptEntry[] {
  const text = resultText(kept);
  if (!text) return entries;
  return entries.map((entry) => (entry.kind === 'result' && !entry.text ? { ...entry, text } : entry));
}
