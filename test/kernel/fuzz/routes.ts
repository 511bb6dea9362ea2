import { kernelRouterOf } from '../../../kernel/http/app.ts';
import type { TestKernel } from '../../support/harness.ts';
import type { RawAnswer, RawRequest } from './http.ts';

/**
 * What makes a request to a route certainly invalid, found out from the route itself;
 * `none` marks a route that rightly accepts any request (see LENIENT in fuzz.test.ts).
 */
export type Refusal = 'path' | 'credentials' | 'body' | 'schema' | 'header' | 'always' | 'none';

export interface FuzzRoute {
  method: string;
  /** With `:name` parameters, as the router declares it. */
  path: string;
  params: string[];
  owner: string;
  bodySchema?: object;
  agentField?: string;
  reads?: 'json' | 'multipart';
  refusals: Refusal[];
}

const MUTATING = ['POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Every mutating route the server serves: the kernel's, read from the router the kernel's app
 * serves, and the enabled plugins', read from the extension host's route table. A route added
 * to either is fuzzed without touching the test.
 */
export function mutatingRoutes(t: TestKernel): FuzzRoute[] {
  const router = kernelRouterOf(t.kernel.services)!;
  const kernel = router.stack.flatMap((layer) => layer.methods.filter((method) => MUTATING.includes(method)).map((method): FuzzRoute => ({
    method, path: layer.path as string, params: layer.paramNames.map((p) => String(p.name)), owner: 'kernel', refusals: [],
  })));
  const plugins = t.kernel.host.routes.all().filter((r) => MUTATING.includes(r.route.method)).map((r): FuzzRoute => ({
    method: r.route.method, path: r.fullPath, params: r.params, owner: r.plugin, bodySchema: r.route.body, agentField: r.route.agentBodyField, refusals: [],
  }));
  const seen = new Set<string>();
  return [...kernel, ...plugins].filter((route) => {
    const name = `${route.method} ${route.path}`;
    if (seen.has(name)) return false;
    seen.add(name);
    return true;
  });
}

export function fillPath(path: string, values: (name: string) => string): string {
  return path.replace(/:(\w+)/g, (_, name: string) => values(name));
}

const MALFORMED_JSON: Pick<RawRequest, 'headers' | 'body'> = { headers: { 'content-type': 'application/json' }, body: '{"probe": ' };
const readsJson = (a: RawAnswer) => a.status === 400 && /"code":"bad_request"/.test(a.text) && /Malformed JSON/.test(a.text);
const readsMultipart = (a: RawAnswer) => a.status === 415 && /multipart\/form-data/.test(a.text);

/**
 * Finds out, by asking the route, what it refuses for certain:
 * - any route with a path parameter refuses a segment that names nothing;
 * - a route that answers 401 to an unknown bearer token (with a malformed body, so that even a
 *   public route writes nothing) refuses every request with such a token;
 * - a route that answers "Malformed JSON" (or 415 asking for multipart) when given a valid
 *   path and credentials reads its body, and refuses every body invalid for any route;
 * - a plugin route with a body schema refuses a body that breaks it;
 * - a plugin route refuses an invalid Idempotency-Key before the plugin is called;
 * - a route that refuses the probe and an empty JSON object alike with one code is closed in
 *   this mode (sign-up in local_trusted mode) and refuses everything.
 * `valid` sends with valid credentials to resources made for probing, since a route that ignores
 * its body acts on them; `validAccepted` tells that it did, and that they may be used up.
 */
export async function classify(route: FuzzRoute, send: (req: RawRequest) => Promise<RawAnswer>, targets: {
  anonymousPath: string;
  /** A path to resources made for this probe, with credentials that reach them; absent to reuse `knownReads`. */
  valid?: { path: () => Promise<string>; headers: Record<string, string> };
  knownReads?: FuzzRoute['reads'];
}): Promise<{ route: FuzzRoute; validAccepted: boolean }> {
  const refusals: Refusal[] = [];
  let validAccepted = false;
  if (route.params.length > 0) refusals.push('path');
  const anonymous = await send({ method: route.method, path: targets.anonymousPath, ...MALFORMED_JSON, headers: { ...MALFORMED_JSON.headers, authorization: 'Bearer svc_board_probe' } });
  if (anonymous.status === 401) refusals.push('credentials');
  let reads = targets.knownReads;
  if (targets.valid) {
    const valid = await send({ method: route.method, path: await targets.valid.path(), ...MALFORMED_JSON, headers: { ...MALFORMED_JSON.headers, ...targets.valid.headers } });
    reads = readsJson(valid) ? 'json' : readsMultipart(valid) ? 'multipart' : undefined;
    validAccepted = valid.status < 400;
  }
  if (!reads && readsJson(anonymous)) reads = 'json';
  if (reads) refusals.push('body');
  if (route.bodySchema) refusals.push('schema');
  if (route.owner !== 'kernel') refusals.push('header');
  if (refusals.length === 0 && anonymous.status >= 400 && anonymous.status < 500) {
    const empty = await send({ method: route.method, path: targets.anonymousPath, headers: { 'content-type': 'application/json' }, body: '{}' });
    const code = (a: RawAnswer) => /"code":"([a-z_]+)"/.exec(a.text)?.[1];
    if (empty.status === anonymous.status && code(empty) === code(anonymous)) refusals.push('always');
  }
  return { route: { ...route, reads, refusals }, validAccepted };
}
