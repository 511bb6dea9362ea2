import { describe, expect, it } from 'vitest';
import { wiredAnswer } from '../../kernel/host/worker/wired-answer.ts';

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
});
