import type { Router } from '@koa/router';
import { declarationOf, type HttpMethod } from '../route-spec.ts';
import { impliedErrors, pathParameters, type ApiOperation } from './operation.ts';

/**
 * The kernel's operations, read from the router itself: every layer it holds, in
 * registration order, with the declaration it was registered with (buildKernelRouter has
 * already refused a layer without one).
 */
export function kernelOperations(router: Router): ApiOperation[] {
  return router.stack.map((layer) => {
    const declared = declarationOf(layer);
    if (!declared) throw new Error(`Kernel route ${String(layer.path)} has no declaration`);
    const { spec, tag } = declared;
    const validatesInput = Boolean(spec.body || spec.query || spec.rawBody || spec.parameters?.length);
    return {
      method: spec.method,
      path: spec.path,
      operationId: kernelOperationId(spec.method, spec.path),
      summary: spec.summary,
      description: spec.description,
      tags: [tag],
      auth: spec.auth,
      body: spec.body?.schema,
      rawBody: spec.rawBody,
      query: spec.query?.schema,
      parameters: spec.parameters,
      success: typeof spec.success === 'number' ? [spec.success] : spec.success,
      response: spec.response,
      contentType: spec.contentType,
      errors: [...impliedErrors(spec.auth, spec.path, validatesInput), ...(spec.errors ?? [])],
    };
  });
}

/**
 * `GET /api/companies/:companyId/agents` -> `getCompaniesByCompanyIdAgents`: unique because
 * method and path are, and free of dots, which keeps kernel ids apart from plugin ones
 * (`<plugin>.<route>`).
 */
export function kernelOperationId(method: HttpMethod, path: string): string {
  const params = new Set(pathParameters(path));
  const words = path.split('/').filter((segment) => segment && segment !== 'api').flatMap((segment) => {
    if (segment.startsWith(':') && params.has(segment.slice(1))) return ['by', segment.slice(1)];
    return segment.split(/[^A-Za-z0-9]+/).filter(Boolean);
  });
  // Root paths (the public /mcp) are named apart from their /api namesakes (/api/mcp).
  const root = path.startsWith('/api/') ? [] : ['Public'];
  return method.toLowerCase() + [...root, ...words].map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}
