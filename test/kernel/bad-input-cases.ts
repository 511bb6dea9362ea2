/**
 * Bad-input generators of test/kernel/bad-input.test.ts. A route is described by its body
 * fields and their kinds; each kind yields values that the route must refuse with a 4xx.
 * Only values that are wrong for the field whatever else the body holds are generated, so
 * that a success is always a real finding.
 */
export type FieldKind =
  | { kind: 'text'; max?: number; nullable?: boolean; blankRefused?: boolean; nulAllowed?: boolean }
  | { kind: 'uuid'; nullable?: boolean; reference?: boolean }
  | { kind: 'int'; min?: number; max?: number; nullable?: boolean }
  | { kind: 'bool' }
  | { kind: 'enum' }
  | { kind: 'object'; nullable?: boolean; stored?: boolean }
  | { kind: 'strings'; max?: number };

export interface BodyCase { label: string; body?: unknown; raw?: string | FormData; contentType?: string }

export const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';
const HUGE = 'x'.repeat(300_000);

/** JSON text sent as it is: nesting this deep cannot even be serialised by JSON.stringify. */
export class RawJson {
  readonly text: string;
  constructor(text: string) { this.text = text; }
}

/** An object nested deeper than any configuration needs: must be refused, not overflow a stack. */
export function deepJson(depth: number): string {
  return '{"n":'.repeat(depth) + '{"leaf":true}' + '}'.repeat(depth);
}

function wrongValues(field: FieldKind): Array<[string, unknown]> {
  const common: Array<[string, unknown]> = [['an array', ['x']], ['an object', { x: 1 }], ['a boolean', true]];
  switch (field.kind) {
    case 'text': {
      const values: Array<[string, unknown]> = [['a number', 42], ...common, ['a huge string', HUGE]];
      if (field.max !== undefined) values.push(['a string over the limit', 'y'.repeat(field.max + 1)]);
      if (!field.nullable) values.push(['null', null]);
      if (field.blankRefused) values.push(['a blank string', '   ']);
      if (!field.nulAllowed) values.push(['a NUL character', 'a\u0000b']);
      return values;
    }
    case 'uuid': {
      const values: Array<[string, unknown]> = [['a non-uuid', 'not-a-uuid'], ['a number', 7], ...common, ['a huge string', HUGE]];
      if (!field.nullable) values.push(['null', null]);
      if (field.reference) values.push(['an unknown uuid', UNKNOWN_UUID]);
      return values;
    }
    case 'int':
      // 1e309 and -1e309 are valid JSON that JSON.parse turns into ±Infinity; 1e308 is finite, an integer, and beyond every integer column.
      return [['a numeric string', '5'], ['a fraction', 1.5], ['a negative number', (field.min ?? 0) - 1], ['a number beyond 2^53', 1e300],
        ['a number beyond a 64-bit float', new RawJson('1e309')], ['a negative number beyond a 64-bit float', new RawJson('-1e309')], ['1e308', 1e308],
        ...(field.nullable ? [] : [['null', null] as [string, unknown]]), ...common,
        ...(field.max !== undefined ? [['a number over the maximum', field.max + 1] as [string, unknown]] : [])];
    case 'bool':
      return [['a string', 'true'], ['a number', 1], ['null', null], ['an array', [true]], ['an object', {}]];
    case 'enum':
      return [['an unknown value', 'bogus'], ['a number', 1], ['null', null], ['an array', ['x']], ['an object', {}], ['a huge string', HUGE]];
    case 'object': {
      const values: Array<[string, unknown]> = [['a string', 'x'], ['a number', 1], ['an array', [{}]], ['a boolean', true]];
      if (!field.nullable) values.push(['null', null]);
      if (field.stored) values.push(['a NUL character inside', { note: 'a\u0000b' }], ['a NUL character in a key', { 'a\u0000b': 1 }], ['10,000 levels of nesting', new RawJson(deepJson(10_000))]);
      return values;
    }
    case 'strings':
      return [['a string', 'x'], ['an object', {}], ['numbers', [1, 2]], ['nulls', [null]], ['a NUL character', ['a\u0000b']],
        ...(field.max !== undefined ? [['too many items', Array.from({ length: field.max + 1 }, (_, i) => `s${i}`)] as [string, unknown]] : [])];
  }
}

/** Cases for one field: the valid body with that field replaced by each wrong value. */
export function fieldCases(valid: Record<string, unknown>, fields: Record<string, FieldKind>): BodyCase[] {
  const PLACEHOLDER = '__raw_json_value__';
  return Object.entries(fields).flatMap(([name, kind]) => wrongValues(kind).map(([label, value]): BodyCase => {
    if (!(value instanceof RawJson)) return { label: `${name} as ${label}`, body: { ...valid, [name]: value } };
    const raw = JSON.stringify({ ...valid, [name]: PLACEHOLDER }).replace(`"${PLACEHOLDER}"`, value.text);
    return { label: `${name} as ${label}`, raw, contentType: 'application/json' };
  }));
}

/** Cases every JSON route must refuse, whatever its fields. */
export function bodyShapeCases(options: { needsFields: boolean; limitBytes: number }): BodyCase[] {
  const form = new FormData();
  form.set('name', 'x');
  const cases: BodyCase[] = [
    { label: 'malformed JSON', raw: '{"name": "x",', contentType: 'application/json' },
    { label: 'JSON with a trailing comma', raw: '{"name": "x",}', contentType: 'application/json' },
    { label: 'a text/plain body', raw: 'name=x', contentType: 'text/plain' },
    { label: 'a form-encoded body', raw: 'name=x', contentType: 'application/x-www-form-urlencoded' },
    { label: 'a multipart body', raw: form },
    { label: 'a JSON array', body: [{ name: 'x' }] },
    { label: 'JSON null', raw: 'null', contentType: 'application/json' },
    { label: 'a JSON string', raw: '"x"', contentType: 'application/json' },
    { label: 'a JSON number', raw: '42', contentType: 'application/json' },
    { label: 'JSON true', raw: 'true', contentType: 'application/json' },
    { label: 'a body over the JSON limit', raw: JSON.stringify({ name: 'x', pad: 'p'.repeat(options.limitBytes) }), contentType: 'application/json' },
    { label: 'a number beyond a 64-bit float in an extra field', raw: '{"name": "x", "n": 1e309}', contentType: 'application/json' },
    { label: 'a negative number beyond a 64-bit float deep inside', raw: '{"name": "x", "a": [{"b": -1e309}]}', contentType: 'application/json' },
    { label: 'JSON nested 100,000 levels deep', raw: '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000), contentType: 'application/json' },
  ];
  if (options.needsFields) {
    cases.push({ label: 'an empty object', body: {} }, { label: 'no body at all' });
  }
  return cases;
}

/** Path ids that can name nothing. */
export const BAD_IDS: Array<[string, string]> = [
  ['a non-uuid id', 'not-a-uuid'],
  ['an unknown uuid', UNKNOWN_UUID],
  ['an id with SQL in it', encodeURIComponent("x' or '1'='1")],
  ['a 3,000-character id', 'a'.repeat(3000)],
  ['a malformed percent escape', '%E0%A4%A'],
  ['overlong UTF-8', '%C0%AF'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['an encoded NUL', 'a%00b'],
  ['an encoded traversal', '..%2F..%2Fetc%2Fpasswd'],
];

/**
 * Requests Node's HTTP parser refuses before any route runs, sent over a raw socket
 * (test/kernel/connection-limits.test.ts): each answers the JSON error body with this code.
 * `host` is the Host header line of the server under test.
 */
export function malformedHttpCases(host: string): Array<{ label: string; raw: string; status: number; code: string }> {
  return [
    { label: 'headers over 16 KiB', raw: `GET /api/health HTTP/1.1\r\n${host}X-Filler: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431, code: 'request_header_too_large' },
    { label: 'one header line over 16 KiB, never finished', raw: `GET /api/health HTTP/1.1\r\n${host}X-Filler: ${'a'.repeat(70_000)}`, status: 431, code: 'request_header_too_large' },
    { label: 'a garbage request line', raw: 'GARBAGE \x01\x02 NOT-HTTP\r\n\r\n', status: 400, code: 'malformed_request' },
    { label: 'an unknown HTTP version', raw: `GET /api/health HTTP/9.9\r\n${host}\r\n`, status: 400, code: 'malformed_request' },
    { label: 'a header line without a colon', raw: `GET /api/health HTTP/1.1\r\n${host}Bad Header Line\r\n\r\n`, status: 400, code: 'malformed_request' },
    { label: 'a NUL in a header value', raw: `GET /api/health HTTP/1.1\r\n${host}X-Nul: a\u0000b\r\n\r\n`, status: 400, code: 'malformed_request' },
    { label: 'both Content-Length and chunked', raw: `POST /api/companies HTTP/1.1\r\n${host}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, status: 400, code: 'malformed_request' },
    { label: 'a chunk size that is not hex', raw: `POST /api/companies HTTP/1.1\r\n${host}Transfer-Encoding: chunked\r\n\r\nzz\r\n`, status: 400, code: 'malformed_request' },
    { label: 'two Content-Length headers that disagree', raw: `POST /api/companies HTTP/1.1\r\n${host}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, status: 400, code: 'malformed_request' },
  ];
}
