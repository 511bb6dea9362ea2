import { describe, expect, it } from 'vitest';
import { CredentialMask, MaskingStream } from '../../kernel/executions/credential-mask.ts';
import { SseParser } from '../../kernel/http/sse-parser.ts';
import { LineReader, storedLine } from '../../kernel/executions/line-reader.ts';

/**
 * The parts that bound what a run's output costs and mask its credentials, fed the way the
 * executor feeds them (chunks of a pipe, an event stream): what they hold never exceeds their
 * cap, whatever the input, and a credential is masked wherever the chunks split it.
 * (The whole path, through real processes and the runtime: test/plugins/runtime/run-output.test.ts.)
 */
describe('LineReader', () => {
  it('holds at most its cap of a 64 MiB line and counts the rest, then reads on', () => {
    const lines: Array<{ text: string; omitted: number }> = [];
    const reader = new LineReader(1024, (text, omitted) => lines.push({ text, omitted }));
    const block = Buffer.alloc(1 << 20, 'x');
    reader.push(Buffer.from('first\n'));
    for (let i = 0; i < 64; i++) reader.push(block);
    reader.push(Buffer.from('\r\nnext\rlast'));
    reader.end();
    expect(lines).toEqual([
      { text: 'first', omitted: 0 },
      { text: 'x'.repeat(1024), omitted: 64 * (1 << 20) - 1024 },
      { text: 'next', omitted: 0 },
      { text: 'last', omitted: 0 },
    ]);
  });

  it('keeps a character split across chunks whole, and a \\r\\n split across chunks one line end', () => {
    const lines: string[] = [];
    const reader = new LineReader(100, (text) => lines.push(text));
    const euro = Buffer.from('€');
    reader.push(Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]));
    reader.push(Buffer.concat([euro.subarray(1), Buffer.from('b\r')]));
    reader.push(Buffer.from('\nc\n'));
    reader.end();
    expect(lines).toEqual(['a€b', 'c']);
  });
});

describe('CredentialMask', () => {
  const secret = 'tok-"quoted"\\slash-123';
  const mask = new CredentialMask([secret, 'abc']);

  it('masks a value as it is, JSON-escaped and URL-encoded, in keys and values; never a value under 4 characters', () => {
    expect(mask.text(`a ${secret} b ${JSON.stringify(secret)} c ${encodeURIComponent(secret)} abc`)).toBe('a *** b "***" c *** abc');
    expect(mask.value({ [secret]: [secret, { x: `Bearer ${secret}` }] })).toEqual({ '***': ['***', { x: 'Bearer ***' }] });
  });

  it('masks a credential that a line cut falls into whole, and counts what was cut', () => {
    const line = `${'y'.repeat(10)}${secret} tail`;
    expect(storedLine(line, 0, 12, mask)).toEqual({ line: `${'y'.repeat(10)}*** [line cut: 5 bytes omitted]`, omittedBytes: 5 });
    expect(storedLine('short', 0, 12, mask)).toEqual({ line: 'short', omittedBytes: 0 });
  });

  it('masks a credential split across the chunks of a stream, at every split point', () => {
    const text = `before ${secret} middle ${JSON.stringify(secret)} after`;
    for (let split = 1; split < text.length; split++) {
      const stream = new MaskingStream(mask);
      const out = stream.push(text.slice(0, split)) + stream.push(text.slice(split)) + stream.end();
      expect(out).toBe('before *** middle "***" after');
    }
  });
});

describe('SseParser', () => {
  it('drops an event-stream line past its cap whole, saying how much, and parses on', () => {
    const events: Array<{ event: string; data: string }> = [];
    const parser = new SseParser((event, data) => events.push({ event, data }));
    parser.push('event: big\ndata: ');
    const chunk = 'z'.repeat(256 * 1024);
    for (let i = 0; i < 8; i++) parser.push(chunk);
    parser.push('\n\nevent: small\ndata: ok\n\n');
    parser.end();
    expect(events).toEqual([{ event: 'big', data: `[line cut: ${6 + 8 * 256 * 1024} bytes omitted]` }, { event: 'small', data: 'ok' }]);
  });
});
