import { anyBody, invalidBody, type FuzzBody } from './bodies.ts';
import { junkHeaders, malformedAuthorization, otherAuthorization } from './credentials.ts';
import type { RawRequest } from './http.ts';
import type { Random } from './random.ts';
import { fillPath, type FuzzRoute, type Refusal } from './routes.ts';
import { schemaBody, schemaViolation, type SchemaContext } from './schema-bodies.ts';
import { junkQuery, nothingNamingSegment } from './segments.ts';

export interface FuzzContext {
  mode: 'local_trusted' | 'authenticated';
  /** A value of the parameter that names a fixture, so that the other parts of a request are what decides. */
  validParam(path: string, name: string): string;
  /** Authorization header values that authenticate someone ('' sends none: the local board in local_trusted mode). */
  validAuthorization: string[];
  /** The tokens behind them, which malformed variants are made from. */
  tokens: string[];
  schema: Omit<SchemaContext, 'agentField'>;
  limitBytes: number;
}

const WEIGHTS: Record<Refusal, number> = { path: 0.45, credentials: 0.2, body: 0.2, schema: 0.25, header: 0.15, always: 1, none: 1 };

function pickRefusal(rng: Random, refusals: Refusal[]): Refusal {
  const total = refusals.reduce((sum, r) => sum + WEIGHTS[r], 0);
  let roll = rng.next() * total;
  for (const refusal of refusals) {
    roll -= WEIGHTS[refusal];
    if (roll < 0) return refusal;
  }
  return refusals[refusals.length - 1]!;
}

/**
 * One request the route must refuse: one part is certainly wrong for it (a path segment that
 * names nothing, credentials that authenticate nobody, a body it cannot take), and every other
 * part is drawn at random, valid or not.
 */
export function fuzzRequest(rng: Random, route: FuzzRoute, ctx: FuzzContext): { request: RawRequest; label: string } {
  const refusal = pickRefusal(rng, route.refusals);
  const broken = new Set<string>();
  if (refusal === 'path') {
    broken.add(rng.pick(route.params));
    for (const name of route.params) if (rng.chance(0.2)) broken.add(name);
  }
  const path = fillPath(route.path, (name) => (broken.has(name) ? nothingNamingSegment(rng) : encodeURIComponent(ctx.validParam(route.path, name)))) + junkQuery(rng);
  const headers = junkHeaders(rng);

  let authorization: string;
  if (refusal === 'credentials') {
    authorization = ctx.mode === 'authenticated' && rng.chance(0.3) ? '' : malformedAuthorization(rng, ctx.tokens);
  } else if (refusal === 'schema' || refusal === 'header' || rng.chance(0.7)) {
    authorization = rng.pick(ctx.validAuthorization);
  } else {
    authorization = rng.chance(0.5) ? malformedAuthorization(rng, ctx.tokens) : otherAuthorization(rng);
  }
  if (authorization) headers.authorization = authorization;
  if (refusal === 'header') headers['idempotency-key'] = rng.pick(['', 'k'.repeat(rng.int(256, 4000)), '\u00e9t\u00e9', 'a\tb', ' ']);

  let body: FuzzBody;
  if (refusal === 'body') body = invalidBody(rng, route.reads!, ctx.limitBytes);
  else if (refusal === 'schema') body = schemaViolation(rng, route.bodySchema as never, { ...ctx.schema, agentField: route.agentField });
  else if (refusal === 'header') body = schemaBody(rng, route.bodySchema as never, { ...ctx.schema, agentField: route.agentField });
  else body = anyBody(rng, ctx.limitBytes);
  if (body.contentType) headers['content-type'] = body.contentType;

  return { request: { method: route.method, path, headers, body: body.body }, label: `${refusal}: ${body.label}` };
}
