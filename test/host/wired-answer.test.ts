import { describe, expect, it } from 'vitest';
import { readResult, wiredAnswer } from '../../kernel/host/worker/wired-answer.ts';

/** The envelope as the kernel read it from the whole answer's text, body parsed. */
function rebuilt(envelope: Record<string, unknown>): Record<string, unknown> {
  const { body, ...rest } = envelope;
  return body === undefined ? rest : { ...rest, body: JSON.parse(body as string) };
}

describe('a plugin answer leaving the worker', () => {
  const envelopes: unknown[] = [
    { $response: { status: 201, body: { id: 'a', title: 'é ✓ 𝄞' } } },
    { $response: { status: 200, body: [1, 2, 3], headers: { 'x-next-cursor': 'abc' } } },
    { $response: { status: 202 } },
    { $response: { status: 204, body: null } },
    { $response: { status: 200, body: 'plain "text"\n', headers: { 'content-type': 'text/csv' } } },
    { $response: { events: [{ data: { n: 1 } }], headers: { 'mcp-session-id': 's' }, stream: { channel: 'updates' } } },
    { $response: { body: { nested: { deep: true } }, unknown: 'kept in the size' } },
    { $response: {} },
  ];

  it('takes a route\'s respond() envelope apart: body as its JSON text, the other parts as values, the whole text\'s size', () => {
    for (const value of envelopes) {
      for (const kind of ['route', 'webhook'] as const) {
        const answer = wiredAnswer(kind, value);
        expect(answer.value).toBeUndefined();
        const parts = (value as { $response: Record<string, unknown> }).$response;
        const { unknown: _ignored, ...read } = parts;
        expect(rebuilt(answer.envelope as Record<string, unknown>)).toEqual(read);
        expect(answer.bytes).toBe(Buffer.byteLength(JSON.stringify(value)));
      }
    }
  });

  it('sends anything else as its JSON text: plain answers, other call kinds, and objects that only start like an envelope', () => {
    const plain: Array<[Parameters<typeof wiredAnswer>[0], unknown]> = [
      ['route', { id: 1, $response: { status: 201 } }],
      ['route', { $response: { status: 201 }, extra: true }],
      ['route', { $response: [1] }],
      ['route', { $response: null }],
      ['route', { $response: 'x' }],
      ['route', [{ $response: { status: 201 } }]],
      ['route', null],
      ['route', 'text'],
      ['route', { list: [1, 2] }],
      ['tool', { $response: { status: 201, body: 1 } }],
      ['service', { $response: { status: 201, body: 1 } }],
      ['route_batch', [{ ok: true, v: { $response: { status: 201 } } }]],
    ];
    for (const [kind, value] of plain) {
      const answer = wiredAnswer(kind, value);
      expect(answer.envelope).toBeUndefined();
      expect(answer.value).toBe(JSON.stringify(value));
      expect(answer.bytes).toBe(Buffer.byteLength(answer.value!));
    }
  });

  it('passes the value\'s own text on when it is given (readResult), and still takes an envelope apart', () => {
    expect(wiredAnswer('route', { a: 1 }, '{"a":1}').value).toBe('{"a":1}');
    const envelope = wiredAnswer('route', { $response: { status: 201, body: { a: 1 } } }, '{"$response":{"status":201,"body":{"a":1}}}');
    expect(envelope.envelope).toEqual({ status: 201, body: '{"a":1}' });
  });
});

describe('the answer text an isolate hands to done()', () => {
  it('keeps the value\'s text of an answer in the SDK\'s shape, checked to be one JSON value', () => {
    for (const value of [{ a: 1, b: ['é ✓ 𝄞'] }, 'text', 0, null, [], { $response: { status: 201 } }]) {
      const text = JSON.stringify(value);
      expect(readResult(`{"ok":true,"v":${text}}`)).toEqual({ ok: true, v: value, text });
    }
  });

  it('refuses text that only looks like the SDK\'s shape, and reads other shapes whole, without a text', () => {
    const invalid = { ok: false, e: { status: 500, code: 'plugin_error', message: 'Plugin produced no valid result' } };
    expect(readResult('{"ok":true,"v":1,"v":"<b>"}')).toEqual(invalid);
    expect(readResult('{"ok":true,"v":{"a":1}} x}')).toEqual(invalid);
    expect(readResult('{"ok":true,"v":}')).toEqual(invalid);
    expect(readResult('not json')).toEqual(invalid);
    expect(readResult('{"ok":true,"v": 1 }')).toEqual({ ok: true, v: 1, e: undefined });
    expect(readResult('{"v":1,"ok":true}')).toEqual({ ok: true, v: 1, e: undefined });
    expect(readResult('{"ok":true}').e).toMatchObject({ code: 'unserializable_result' });
    expect(readResult('{"ok":false,"e":{"code":"x"},"text":"y"}')).toEqual({ ok: false, v: undefined, e: { code: 'x' } });
    expect(readResult('5')).toEqual({ ok: false, e: undefined });
    expect(readResult(`{"ok":true,"v":${'['.repeat(300)}${']'.repeat(300)}}`).e).toMatchObject({ code: 'plugin_result_too_deep' });
  });
});
