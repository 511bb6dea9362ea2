import type { Random } from './random.ts';

export interface FuzzBody {
  label: string;
  contentType?: string;
  body?: string | Buffer;
}

/** Field names the API uses, so that random objects reach past "unknown field" into type checks. */
const FIELDS = [
  'name', 'description', 'role', 'title', 'status', 'agentId', 'companyId', 'secretId', 'key', 'value', 'version', 'delivery', 'provider',
  'model', 'costCents', 'occurredAt', 'amount', 'budgetMonthlyCents', 'adapterType', 'adapterConfig', 'runtimeConfig', 'metadata', 'permissions',
  'reportsTo', 'principalType', 'principalId', 'permissionKey', 'scope', 'state', 'action', 'entityType', 'entityId', 'actorId', 'actorType',
  'details', 'email', 'password', 'keyName', 'clientName', 'secret', 'grant', 'config', 'localPath', 'packageName', 'tool', 'input', 'params',
  'path', 'reason', 'scopeType', 'scopeId', 'windowKind', 'hardStopEnabled', 'kind', 'externalRef', 'logoAssetId', 'brandColor', 'timezone',
  '__proto__', 'constructor', 'prototype', '', ' ', 'name ', 'NAME', '$where', 'a.b', '0',
];

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/vnd.api+json', 'APPLICATION/JSON', 'application/json; charset=latin1', 'application/json;boundary=x'];
const OTHER_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'text/html', 'application/octet-stream', 'image/png', 'multipart/form-data', 'multipart/form-data; boundary=b', 'multipart/mixed; boundary=b', 'application/jsonx', 'json'];

function junkValue(rng: Random, depth: number): unknown {
  const roll = rng.int(0, 17);
  switch (roll) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, 1e-320, -0]);
    case 3: return rng.pick(['', ' ', 'x', 'not-a-uuid', '2024-13-45T99:99:99Z', 'NaN', '00000000-0000-4000-8000-000000000000', 'true', '1']);
    case 4: return 'y'.repeat(rng.int(200, 20_000));
    case 5: return `a${rng.pick(['\u0000', '\ud800', '\udfff', '\ud83d', '\u0001', '\u202e', '\ufeff'])}b`;
    case 6: return depth < 4 ? Array.from({ length: rng.int(0, 5) }, () => junkValue(rng, depth + 1)) : [];
    case 7: return depth < 4 ? junkObject(rng, depth + 1) : {};
    case 8: return { type: 'secret_ref', secretId: rng.pick(['x', rng.uuid()]), version: rng.pick(['latest', 0, -1, 'x']) };
    case 9: return rng.pick(['<script>alert(1)</script>', "' or '1'='1", '${jndi:ldap://x}', '../../etc/passwd', '%00', '{{7*7}}']);
    default: return rng.pick([rng.uuid(), rng.hex(rng.int(1, 64)), new Date(rng.int(-1e13, 1e13)).toISOString()]);
  }
}

function junkObject(rng: Random, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = rng.int(0, 6); i > 0; i--) out[rng.pick(FIELDS)] = junkValue(rng, depth);
  return out;
}

function nested(depth: number, array: boolean): string {
  return array ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Inserts a NUL or a lone surrogate escape into a JSON text: into a string, or as a whole key. */
function withUnstorableText(rng: Random, json: string): string {
  const bad = rng.pick(['\\u0000', '\\ud800', '\\udc00', '\\ud83d', '\\udfff\\ud800']);
  const inValue = json.replace(/"([^"\\]*)"(?=[,}])/, `"$1${bad}"`);
  if (inValue !== json && rng.chance(0.5)) return inValue;
  return json === '{}' ? `{"${bad}":1}` : json.replace('{', `{"${bad}":1,`);
}

function multipart(rng: Random, truncated: boolean): FuzzBody {
  const type = rng.pick(['image/png', 'text/plain', 'image/svg+xml', 'application/json']);
  const field = rng.pick(['file', 'other', 'file[]', '']);
  const head = `--b\r\nContent-Disposition: form-data; name="${field}"; filename="${rng.pick(['a.png', '../../x', '%00', ''])}"\r\nContent-Type: ${type}\r\n\r\n`;
  const content = rng.pick(['abc', '\u0089PNG\r\n\u001a\n', '<svg onload="x"/>', '']);
  const body = truncated ? rng.pick([`${head}${content}`, head.slice(0, rng.int(1, head.length - 1)), '--b', `${head}${content}\r\n--b\r\n`]) : `${head}${content}\r\n--b--\r\n`;
  return { label: truncated ? 'a truncated multipart body' : 'a multipart body', contentType: rng.pick(['multipart/form-data; boundary=b', 'multipart/form-data; boundary=b; charset=x']), body };
}

/**
 * Bodies every route that reads a JSON body must refuse, whatever its schema: JSON that does
 * not parse (cut short, trailing commas, other syntaxes), another content type with a body,
 * nesting beyond 100 levels, more bytes than the limit, NULs or lone surrogates in a string
 * or key, and numbers beyond a 64-bit float (`1e309`, which JSON.parse reads as Infinity). A route reading multipart gets JSON, other types and truncated or partless forms.
 */
export function invalidBody(rng: Random, reads: 'json' | 'multipart', limitBytes: number): FuzzBody {
  if (reads === 'multipart') {
    const roll = rng.int(0, 3);
    if (roll === 0) return { label: 'JSON to an upload', contentType: rng.pick(JSON_TYPES), body: JSON.stringify(junkObject(rng)) };
    if (roll === 1) return { label: 'another type to an upload', contentType: rng.pick(OTHER_TYPES.filter((t) => !t.startsWith('multipart/form-data'))), body: 'x' };
    return multipart(rng, true);
  }
  const json = JSON.stringify(junkObject(rng));
  switch (rng.int(0, 8)) {
    case 0: return { label: 'JSON cut short', contentType: rng.pick(JSON_TYPES), body: json.slice(0, rng.int(1, Math.max(1, json.length - 1))) || '{' };
    case 1: return { label: 'JSON with a syntax error', contentType: rng.pick(JSON_TYPES), body: rng.pick(['{"a":1,}', "{'a':1}", '{a:1}', '{"a":NaN}', '{"a":Infinity}', '{"a":1} // c', '{"a":1}{"b":2}', '{"a":undefined}', '\ufeff{"a":', '{"a":"\u0001"}', '{"a":1]', '[}', '{"a":01}', '{"\\x41":1}']) };
    case 2: return { label: 'another content type', contentType: rng.pick(OTHER_TYPES), body: rng.pick([json, 'name=x&value=y', '<a/>', 'x']) };
    case 3: return { label: 'nesting beyond 100 levels', contentType: 'application/json', body: nested(rng.int(101, 5000), rng.chance(0.5)).replace(/^\[/, '{"a":[').replace(/\]$/, ']}') };
    case 4: return { label: 'a body over the limit', contentType: 'application/json', body: JSON.stringify({ name: 'x', pad: 'p'.repeat(limitBytes + rng.int(1, 4096)) }) };
    // Led by a byte that is not UTF-8, so that no draw can be JSON by chance.
    case 5: return { label: 'bytes that are not JSON', contentType: 'application/json', body: Buffer.from([0xff, ...Array.from({ length: rng.int(0, 63) }, () => rng.int(0, 255))]) };
    case 6: return { label: 'a number JSON reads as Infinity', contentType: rng.pick(JSON_TYPES), body: withInfiniteNumber(rng, json) };
    default: return { label: 'a NUL or lone surrogate in a string or key', contentType: rng.pick(JSON_TYPES), body: withUnstorableText(rng, json) };
  }
}

/**
 * Any body at all, for requests whose path or credentials already make them invalid: the
 * refusing bodies above, plus none, empty, well-formed JSON of every shape with wrong types,
 * missing and extra fields, forms and multipart, complete or cut short.
 */
export function anyBody(rng: Random, limitBytes: number): FuzzBody {
  const roll = rng.int(0, 11);
  if (roll === 0) return { label: 'no body' };
  if (roll === 1) return { label: 'an empty body', contentType: rng.pick(JSON_TYPES), body: '' };
  if (roll === 2) return { label: 'JSON that is not an object', contentType: 'application/json', body: rng.pick(['[]', '[{}]', 'null', '"x"', '42', 'true', '""', '[null]']) };
  if (roll === 3) return multipart(rng, rng.chance(0.5));
  if (roll <= 6) return { label: 'a JSON object of wrong types, missing and extra fields', contentType: rng.pick(JSON_TYPES), body: JSON.stringify(junkObject(rng)) };
  return invalidBody(rng, 'json', limitBytes);
}

/** A JSON object with a field, named like a number field, whose value parses to ±Infinity. */
function withInfiniteNumber(rng: Random, json: string): string {
  const field = `"${rng.pick(['n', 'budgetMonthlyCents', 'maxBytes', 'limit', 'version', 'costCents'])}":${rng.pick(['1e309', '-1e309', '1E400', '-9e999'])}`;
  // Last, so that a field of the same name drawn before it does not replace it.
  return json === '{}' ? `{${field}}` : json.replace(/\}$/, `,${field}}`);
}
