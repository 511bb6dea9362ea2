/**
 * The Anthropic Messages API wire format, as far as the scripted model speaks it: the request a
 * client sends to `POST /v1/messages`, the response body and the server-sent events of a streamed
 * answer. Written from the API reference (https://docs.anthropic.com/en/api/messages,
 * .../messages-streaming, .../errors) and checked against what Claude Code 2.1 sends and accepts.
 */

export interface TextBlock { type: 'text'; text: string }
export interface ThinkingBlock { type: 'thinking'; thinking: string; signature: string }
export interface ToolUseBlock { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<{ type: string; text?: string }>;
  is_error?: boolean;
}
/** Blocks a client may send; unknown block types pass through untouched. */
export type RequestBlock = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | { type: string; [key: string]: unknown };

export interface MessageParam {
  /** Claude Code also sends mid-conversation `system` turns. */
  role: 'user' | 'assistant' | 'system';
  content: string | RequestBlock[];
}

export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | TextBlock[];
  tools?: Array<{ name: string; description?: string; input_schema?: unknown; type?: string }>;
  stream?: boolean;
  thinking?: unknown;
  metadata?: unknown;
  output_config?: { effort?: string };
  [key: string]: unknown;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  service_tier?: 'standard';
}

export type ResponseBlock = TextBlock | ThinkingBlock | ToolUseBlock;
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'pause_turn' | 'refusal';

export interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ResponseBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: Usage;
}

/** The error types the API answers with (`{type: 'error', error: {type, message}}`). */
export type ErrorType =
  | 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error'
  | 'request_too_large' | 'rate_limit_error' | 'api_error' | 'overloaded_error';

export interface ErrorBody { type: 'error'; error: { type: ErrorType; message: string }; request_id?: string }

/** The events of a streamed answer, in the order the API sends them. */
export type StreamEvent =
  | { type: 'message_start'; message: Message }
  | { type: 'content_block_start'; index: number; content_block: ResponseBlock }
  | { type: 'content_block_delta'; index: number; delta:
      | { type: 'text_delta'; text: string }
      | { type: 'thinking_delta'; thinking: string }
      | { type: 'signature_delta'; signature: string }
      | { type: 'input_json_delta'; partial_json: string } }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: StopReason; stop_sequence: string | null }; usage: Usage }
  | { type: 'message_stop' }
  | { type: 'ping' };

/** The SSE frame of one event: the event name is the event's own type. */
export function sseFrame(event: StreamEvent | ErrorBody): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * The events of a whole message. `message_start` carries the input figures and one output token
 * (as the API does: the output is not known yet); `message_delta` carries the final figures.
 */
export function streamEvents(message: Message): StreamEvent[] {
  const events: StreamEvent[] = [{
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...message.usage, output_tokens: Math.min(1, message.usage.output_tokens) } },
  }];
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of pieces(block.text)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    } else if (block.type === 'thinking') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const piece of pieces(block.thinking)) events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    } else {
      events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      for (const piece of pieces(JSON.stringify(block.input))) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
    }
    events.push({ type: 'content_block_stop', index });
    if (index === 0) events.push({ type: 'ping' });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: message.stop_reason ?? 'end_turn', stop_sequence: null }, usage: message.usage });
  events.push({ type: 'message_stop' });
  return events;
}

/** Splits text into a few deltas, as a real stream does, so a client's joining is exercised. */
function pieces(text: string): string[] {
  if (text.length <= 8) return [text];
  const size = Math.ceil(text.length / 3);
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}
