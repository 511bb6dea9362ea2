import type { Layer, Router, RouterContext } from '@koa/router';
import type { KernelServices } from '../services.ts';
import { parseBody, parseQuery } from './request.ts';
import { authorize, type ActorFor, type RouteAuthKind } from './route-auth.ts';
import type { Schema, Validator } from './validate.ts';

/**
 * The one way a kernel route is registered. A declaration states what the OpenAPI document
 * says about the route (who may call it, its body and query schemas, its answers), and the
 * same declaration runs the route: the guard of its auth kind runs before the handler, and
 * the handler reads its body and query through the declared validators, so the schema a
 * client reads is the schema the request is checked against.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Error statuses a route answers beyond those its auth kind, path and inputs imply. */
export type DeclaredErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 502 | 504;

/** A parameter the handler reads by hand (a header, or a query value it clamps instead of refusing). */
export interface ParameterDoc {
  name: string;
  in: 'query' | 'header';
  description: string;
  schema: Schema;
}

export interface RouteSpec<B = unknown, Q = unknown, A extends RouteAuthKind = RouteAuthKind> {
  method: HttpMethod;
  /** Koa form: parameters as `:name`. */
  path: string;
  auth: A;
  summary: string;
  description?: string;
  /** The JSON body's validator; the handler reads the body with `req.body()`. */
  body?: Validator<B>;
  /** The query's validator; the handler reads the query with `req.query()`. */
  query?: Validator<Q>;
  /** A body that is not JSON (an upload, a webhook delivery), described for the reference only. */
  rawBody?: { contentType: string; schema?: Schema; description: string };
  parameters?: readonly ParameterDoc[];
  /** Status of a successful answer, or every status a success may have. */
  success: number | readonly number[];
  /** Schema of a successful JSON answer, where it is known; a JSON object otherwise. */
  response?: Schema;
  /** Content type of a successful answer that is not JSON (an image, an event stream). */
  contentType?: string;
  errors?: readonly DeclaredErrorStatus[];
}

/** The answer of a route that lists records. */
export const LIST_RESPONSE: Schema = { type: 'array', items: { type: 'object' } };

/** What a handler gets besides the Koa context. */
export interface RouteRequest<B, Q, A extends RouteAuthKind> {
  /** The actor its route's guard admitted. */
  actor: ActorFor<A>;
  /** Reads and validates the JSON body with the declared validator (400 on failure). */
  body(): Promise<B>;
  /** Validates the query with the declared validator (400 on failure). */
  query(): Q;
}

export type RouteHandler<B, Q, A extends RouteAuthKind> = (ctx: RouterContext, req: RouteRequest<B, Q, A>) => Promise<void> | void;

/** A registered route as the OpenAPI generator reads it. */
export interface DeclaredRoute {
  spec: RouteSpec;
  /** The group it is listed under in the reference. */
  tag: string;
}

const declarations = new WeakMap<Layer, DeclaredRoute>();

export type DeclareRoute = <B = never, Q = never, A extends RouteAuthKind = RouteAuthKind>(spec: RouteSpec<B, Q, A>, handler: RouteHandler<B, Q, A>) => void;

/**
 * Returns the route declarer of one route module: every route it declares is listed under
 * `tag` in the reference.
 */
export function declareRoutes(router: Router, kernel: KernelServices, tag: string): DeclareRoute {
  return <B, Q, A extends RouteAuthKind>(spec: RouteSpec<B, Q, A>, handler: RouteHandler<B, Q, A>) => {
    const layer = router.register(spec.path, [spec.method.toLowerCase()], async (ctx: RouterContext) => {
      const actor = authorize(ctx, spec.auth);
      await handler(ctx, {
        actor,
        body: () => {
          if (!spec.body) throw new Error(`${spec.method} ${spec.path} declares no body validator`);
          return parseBody(ctx, kernel, spec.body);
        },
        query: () => {
          if (!spec.query) throw new Error(`${spec.method} ${spec.path} declares no query validator`);
          return parseQuery(ctx, spec.query);
        },
      });
    }) as Layer;
    declarations.set(layer, { spec: spec as RouteSpec, tag });
  };
}

/** The declaration behind a router layer, if it was registered through declareRoutes. */
export function declarationOf(layer: Layer): DeclaredRoute | undefined {
  return declarations.get(layer);
}

/**
 * Refuses a router holding a route registered another way: it would be served without a
 * declared guard and missing from the reference. Checked once, when the router is built.
 */
export function assertEveryRouteDeclared(router: Router): void {
  const undeclared = router.stack.filter((layer) => !declarations.has(layer));
  if (undeclared.length > 0) {
    const names = undeclared.map((layer) => `${layer.methods.filter((m) => m !== 'HEAD').join('/')} ${String(layer.path)}`);
    throw new Error(`Kernel routes must be registered through declareRoutes (kernel/http/route-spec.ts); undeclared: ${names.join(', ')}`);
  }
}
