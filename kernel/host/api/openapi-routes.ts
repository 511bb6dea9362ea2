import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Router } from '@koa/router';
import type { RouteModule } from '../../http/app.ts';
import { openApiDocument, type DocumentTag } from '../../http/openapi/document.ts';
import { kernelOperations } from '../../http/openapi/kernel-operations.ts';
import type { ApiOperation } from '../../http/openapi/operation.ts';
import { declareRoutes } from '../../http/route-spec.ts';
import type { KernelServices } from '../../services.ts';
import { pluginOperations, pluginTags } from '../contributions/route-openapi.ts';
import type { ExtensionHost } from '../extension-host.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

interface Rendered { version: number; text: string; etag: string }

/**
 * `GET /api/openapi.json`: the OpenAPI 3.1 document of this instance, built on request from
 * the kernel router's declarations and the host's route table as this process has it
 * mounted, so a plugin enabled or disabled in any process shows here once this process has
 * followed. Rendering is cached by the table's version, which changes with every mount and
 * unmount. Any board user or agent may read it: the list of installed plugins is not for
 * anonymous callers of a public instance.
 */
export const openApiRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Reference');
  route({
    method: 'GET', path: '/api/openapi.json', auth: 'any', success: [200, 304],
    summary: 'This OpenAPI document: every kernel route and every route of the enabled plugins',
    description: 'Answers 304 when If-None-Match names the current ETag.',
  }, (ctx) => {
    const rendered = renderedOpenApi(kernel, host, router);
    ctx.set('ETag', rendered.etag);
    ctx.set('Cache-Control', 'no-cache');
    if (ctx.get('if-none-match').split(',').map((tag) => tag.trim()).includes(rendered.etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = rendered.text;
  });
};

const renderings = new WeakMap<ExtensionHost, { kernelPart?: { operations: ApiOperation[]; tags: DocumentTag[] }; rendered?: Rendered }>();

/**
 * The document as JSON text with its ETag, for the route and the public MCP endpoint's
 * documentation tools. The kernel's part is read once, on first use (every route module has
 * registered by then); the whole is rendered again when the host's route table changes.
 */
export function renderedOpenApi(kernel: KernelServices, host: ExtensionHost, router: Router): Rendered {
  let cache = renderings.get(host);
  if (!cache) renderings.set(host, cache = {});
  if (cache.rendered?.version !== host.routes.version) {
    cache.kernelPart ??= describeKernel(router);
    cache.rendered = render(kernel, host, host.routes.version, cache.kernelPart);
  }
  return cache.rendered;
}

function describeKernel(router: Router): { operations: ApiOperation[]; tags: DocumentTag[] } {
  const operations = kernelOperations(router);
  const tags = [...new Set(operations.flatMap((operation) => operation.tags))].map((name) => ({ name }));
  return { operations, tags };
}

function render(kernel: KernelServices, host: ExtensionHost, version: number, kernelPart: { operations: ApiOperation[]; tags: DocumentTag[] }): Rendered {
  const routes = host.routes.all();
  const plugins = pluginOperations(routes);
  const serving = new Set(routes.map((mounted) => mounted.plugin));
  const loaded = [...host.plugins.values()].filter((plugin) => serving.has(plugin.key));
  const document = openApiDocument({
    version: VERSION,
    deploymentMode: kernel.config.deploymentMode,
    operations: [...kernelPart.operations, ...plugins.operations],
    tags: [...kernelPart.tags, ...pluginTags(loaded)],
    schemas: plugins.schemas,
  });
  const text = JSON.stringify(document);
  return { version, text, etag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"` };
}
