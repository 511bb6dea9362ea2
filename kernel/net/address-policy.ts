/**
 * Which network addresses `ctx.http.fetch` may connect to. The check runs on addresses
 * (after DNS), never on names: a name can resolve anywhere. Every textual form of an
 * address that a resolver or a URL parser accepts is parsed here into bytes first
 * (inet_aton's decimal, octal, hex and short IPv4 forms; IPv6 with brackets, zone ids and
 * embedded IPv4), so that no spelling of 127.0.0.1 looks public.
 */

export type AddressClass =
  | 'public' | 'private' | 'loopback' | 'link_local' | 'unique_local' | 'carrier_grade_nat' | 'benchmark'
  | 'multicast' | 'unspecified' | 'broadcast' | 'reserved' | 'documentation' | 'metadata';

/**
 * Classes an operator may open for one explicitly allow-listed host (a service on the LAN
 * or on this machine). Metadata, multicast, broadcast, unspecified and reserved space stay
 * closed whatever the configuration says: nothing legitimate lives there.
 */
export const OVERRIDABLE_CLASSES: ReadonlySet<AddressClass> = new Set(['private', 'loopback', 'link_local', 'unique_local', 'carrier_grade_nat', 'benchmark']);

/** Host names of cloud metadata services, refused before any DNS lookup. */
export const METADATA_HOST_NAMES: ReadonlySet<string> = new Set([
  'metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal',
]);

export interface ParsedIp { family: 4 | 6; bytes: number[] }

const IPV4_PART = /^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$/i;

/**
 * IPv4 in every form inet_aton accepts: 1 to 4 parts, each decimal, octal (leading 0) or
 * hex (0x); the last part fills the remaining bytes (`127.1`, `2130706433`, `0x7f.1`).
 */
export function parseIPv4(text: string): number[] | null {
  const trimmed = text.endsWith('.') ? text.slice(0, -1) : text;
  const parts = trimmed.split('.');
  if (parts.length < 1 || parts.length > 4 || parts.some((part) => !IPV4_PART.test(part))) return null;
  const values = parts.map((part) => {
    if (/^0x/i.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
    if (part.length > 1 && part.startsWith('0')) return Number.parseInt(part.slice(1), 8);
    return Number(part);
  });
  if (values.some((value) => !Number.isSafeInteger(value))) return null;
  const last = values.pop()!;
  if (values.some((value) => value > 255)) return null;
  const lastBytes = 4 - values.length;
  if (last >= 256 ** lastBytes) return null;
  const bytes = [...values];
  for (let i = lastBytes - 1; i >= 0; i--) bytes.push(Math.floor(last / 256 ** i) % 256);
  return bytes;
}

/** IPv6 text (brackets and a `%zone` suffix allowed) into 16 bytes. */
export function parseIPv6(text: string): number[] | null {
  let body = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = body.indexOf('%');
  if (zone !== -1) body = body.slice(0, zone);
  body = body.toLowerCase();
  if (!body.includes(':') || body.length > 45) return null;
  const lastColon = body.lastIndexOf(':');
  const last = body.slice(lastColon + 1);
  if (last.includes('.')) {
    // An embedded dotted quad is strict: four decimal parts, as RFC 4291 writes it.
    const quad = last.split('.');
    if (quad.length !== 4 || quad.some((part) => !/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255)) return null;
    const [a, b, c, d] = quad.map(Number) as [number, number, number, number];
    body = `${body.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (half: string) => (half === '' ? [] : half.split(':'));
  const head = groupsOf(halves[0]!);
  const rest = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if ([...head, ...rest].some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return null;
  const given = head.length + rest.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return null;
  const groups = [...head, ...Array<string>(8 - given).fill('0'), ...rest].map((group) => Number.parseInt(group, 16));
  const bytes: number[] = [];
  for (const group of groups) bytes.push(group >> 8, group & 0xff);
  return bytes;
}

export function parseIp(text: string): ParsedIp | null {
  const v6 = parseIPv6(text);
  if (v6) return { family: 6, bytes: v6 };
  const v4 = parseIPv4(text);
  return v4 ? { family: 4, bytes: v4 } : null;
}

/** The canonical text of an address (dotted quad, or compressed lower-case IPv6 without brackets). */
export function formatIp(ip: ParsedIp): string {
  if (ip.family === 4) return ip.bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip.bytes[i]! << 8) | ip.bytes[i + 1]!);
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i > 1) { bestStart = i; bestLength = j - i; }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

export function canonicalIp(text: string): string | null {
  const parsed = parseIp(text);
  return parsed ? formatIp(parsed) : null;
}

type Range = [bytes: number[], prefix: number, cls: AddressClass];

const V4_RANGES: Range[] = [
  [[169, 254, 169, 254], 32, 'metadata'], // AWS, GCP, Azure, OpenStack, Oracle
  [[169, 254, 170, 2], 32, 'metadata'], // ECS task metadata
  [[100, 100, 100, 200], 32, 'metadata'], // Alibaba Cloud
  [[255, 255, 255, 255], 32, 'broadcast'],
  [[0, 0, 0, 0], 8, 'unspecified'], // "this network": 0.0.0.0 reaches the local host on Linux
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'carrier_grade_nat'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link_local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2, 0], 24, 'documentation'],
  [[192, 88, 99, 0], 24, 'reserved'], // 6to4 relay anycast
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'benchmark'],
  [[198, 51, 100, 0], 24, 'documentation'],
  [[203, 0, 113, 0], 24, 'documentation'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
];

const V6_RANGES: Range[] = [
  [[0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54], 128, 'metadata'], // AWS IMDS over IPv6
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, 'reserved'], // discard-only
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'documentation'],
  [[0x20, 0x01, 0x00], 23, 'reserved'], // IETF protocol assignments, Teredo, ORCHID
  [[0x20, 0x02], 16, 'reserved'], // 6to4 (deprecated; tunnels to any IPv4 address)
  [[0x3f, 0xff], 20, 'documentation'],
  [[0x5f, 0x00], 16, 'reserved'], // SRv6 SIDs
  [[0xfc, 0x00], 7, 'unique_local'],
  [[0xfe, 0x80], 10, 'link_local'],
  [[0xfe, 0xc0], 10, 'reserved'], // deprecated site-local
  [[0xff, 0x00], 8, 'multicast'],
];

function inRange(bytes: number[], base: number[], prefix: number): boolean {
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((base[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function classifyV4(bytes: number[]): AddressClass {
  for (const [base, prefix, cls] of V4_RANGES) if (inRange(bytes, base, prefix)) return cls;
  return 'public';
}

function classifyV6(bytes: number[]): AddressClass {
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (zeros(0, 16)) return 'unspecified';
  if (zeros(0, 15) && bytes[15] === 1) return 'loopback';
  // Forms that carry an IPv4 address: they reach whatever that address is.
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyV4(bytes.slice(12)); // ::ffff:a.b.c.d (mapped)
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12)) return classifyV4(bytes.slice(12)); // ::ffff:0:a.b.c.d (translated)
  if (inRange(bytes, [0x00, 0x64, 0xff, 0x9b], 96)) return classifyV4(bytes.slice(12)); // 64:ff9b::a.b.c.d (NAT64)
  if (zeros(0, 12)) return 'reserved'; // ::a.b.c.d (deprecated IPv4-compatible)
  for (const [base, prefix, cls] of V6_RANGES) if (inRange(bytes, base, prefix)) return cls;
  // Only 2000::/3 is global unicast; everything else is unassigned or special.
  return (bytes[0]! & 0xe0) === 0x20 ? 'public' : 'reserved';
}

/** The class of an address in any accepted spelling; text that is no address is `reserved` (refused). */
export function classifyAddress(text: string): AddressClass {
  const parsed = parseIp(text);
  if (!parsed) return 'reserved';
  return parsed.family === 4 ? classifyV4(parsed.bytes) : classifyV6(parsed.bytes);
}

/** Whether a connection to this address is allowed; `privateAllowed` is the operator's per-host allowance. */
export function addressAllowed(text: string, privateAllowed: boolean): { allowed: boolean; cls: AddressClass } {
  const cls = classifyAddress(text);
  return { allowed: cls === 'public' || (privateAllowed && OVERRIDABLE_CLASSES.has(cls)), cls };
}

const DESCRIPTIONS: Record<AddressClass, string> = {
  public: 'a public address', private: 'a private-network address', loopback: 'a loopback address', link_local: 'a link-local address',
  unique_local: 'a unique-local address', carrier_grade_nat: 'a carrier-grade NAT address', benchmark: 'a benchmarking address',
  multicast: 'a multicast address', unspecified: 'an unspecified address', broadcast: 'the broadcast address',
  reserved: 'a reserved address', documentation: 'a documentation address', metadata: 'a cloud metadata address',
};

export function describeClass(cls: AddressClass): string {
  return DESCRIPTIONS[cls];
}
