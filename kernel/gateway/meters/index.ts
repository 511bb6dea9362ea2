import type { MeterKind } from '../../../sdk/plugin/answers.ts';
import { anthropicFormat } from './anthropic.ts';
import { geminiFormat } from './gemini.ts';
import { Meter, type WireFormat } from './meter.ts';
import { openaiChatFormat } from './openai-chat.ts';
import { openaiResponsesFormat } from './openai-responses.ts';

const FORMATS: Record<MeterKind, WireFormat | null> = {
  anthropic: anthropicFormat,
  'openai-responses': openaiResponsesFormat,
  'openai-chat': openaiChatFormat,
  gemini: geminiFormat,
  none: null,
};

/** The meter of one exchange for the wire format the plugin named (`none`: nothing is metered, nothing is cut). */
export function meterFor(kind: MeterKind, requestBytes: number): Meter {
  return new Meter(FORMATS[kind], requestBytes);
}

export { Meter } from './meter.ts';
