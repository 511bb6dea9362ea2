import type { MeterState, WireFormat } from './meter.ts';
import { numberOr } from './meter.ts';

/**
 * Gemini generateContent: `usageMetadata` (promptTokenCount includes cachedContentTokenCount;
 * output is candidatesTokenCount + thoughtsTokenCount). A stream may report it on several
 * chunks; the last one seen counts, and it is final once the stream ends on its own (the
 * exchange says so) or a chunk with a finishReason carries it.
 */
export const geminiFormat: WireFormat = {
  event(state, _event, data) {
    if (!data) return;
    let finished = false;
    for (const candidate of Array.isArray(data.candidates) ? data.candidates as Array<Record<string, unknown>> : []) {
      const parts = (candidate.content as Record<string, unknown> | undefined)?.parts;
      for (const part of Array.isArray(parts) ? parts as Array<Record<string, unknown>> : []) {
        if (typeof part.text === 'string') state.delta(part.text);
        else if (part.functionCall) state.delta(JSON.stringify(part.functionCall));
      }
      if (candidate.finishReason) finished = true;
    }
    if (typeof data.modelVersion === 'string') state.model = data.modelVersion;
    readUsage(state, data.usageMetadata, finished);
  },
  body(state, body) {
    if (typeof body.modelVersion === 'string') state.model = body.modelVersion;
    readUsage(state, body.usageMetadata, true);
  },
  cutFrame(message) {
    return `data: ${JSON.stringify({ error: { code: 403, message, status: 'PERMISSION_DENIED' } })}\n\n`;
  },
  streamEnded(state) {
    if (state.input !== null || state.output !== null) state.final = true;
  },
};

function readUsage(state: MeterState, value: unknown, final: boolean): void {
  if (!value || typeof value !== 'object') return;
  const usage = value as Record<string, unknown>;
  const prompt = numberOr(usage.promptTokenCount, null);
  const cached = numberOr(usage.cachedContentTokenCount, 0) ?? 0;
  if (prompt !== null) {
    state.input = Math.max(0, prompt - cached);
    state.cachedInput = Math.min(cached, prompt);
  }
  const candidates = numberOr(usage.candidatesTokenCount, null);
  const thoughts = numberOr(usage.thoughtsTokenCount, 0) ?? 0;
  if (candidates !== null || thoughts > 0) state.output = (candidates ?? 0) + thoughts;
  if (final) state.final = true;
}
