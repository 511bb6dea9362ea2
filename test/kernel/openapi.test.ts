import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelRouterOf } from '../../kernel/http/app.ts';
import { openApiPath, securityOf } from '../../kernel/http/openapi/operation.ts';
import { declarationOf } from '../../kernel/http/route-spec.ts';
import { authMismatches } from '../support/auth-probe.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { concretePath, dereferenced, expectValidDocument, fetchDocument, operationsOf } from '../support/openapi.ts';
import { boardToken, insertUser } from './agents-fixtures.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * GET /api/openapi.json on a kernel without plugins: a valid OpenAPI 3.1 document holding
 * every route the kernel router mounts, with the auth kind its guard enforces, the one error
 * body, and the very schemas its validators check requests with.
 */
let t: TestKernel;
let admin: string;
let board: string;
let agent: string;
let document: any;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  admin = await boardToken(t, await insertUser(t, { admin: true }));
  board = await boardToken(t, await insertUser(t));
  const company = (await t.api.post('/api/companies', { name: 'Reference' }, { token: admin })).body;
  const created = (await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Reader', role: 'engineer' }, { token: admin })).body;
  agent = (await t.api.post(`/api/agents/${created.id}/keys`, {}, { token: admin })).body.token;
  document = await fetchDocument(t.api, board);
});
afterAll(async () => { await t?.stop(); });

function router() {
  const found = kernelRouterOf(t.kernel.services);
  if (!found) throw new Error('the running kernel has no router');
  return found;
}

describe('GET /api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    await expectValidDocument(document);
  });

  it('is for board users and agents, and answers 304 to its own ETag', async () => {
    expect((await t.api.get('/api/openapi.json')).status).toBe(401);
    const res = await t.api.get('/api/openapi.json', { token: agent });
    expect(res.status).toBe(200);
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect((await t.api.get('/api/openapi.json', { token: agent, headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  it('lists every route the kernel router mounts, with its method, and nothing else', () => {
    const mounted = router().stack.flatMap((layer) => layer.methods.filter((method) => method !== 'HEAD').map((method) => `${method} ${openApiPath(String(layer.path))}`));
    const listed = operationsOf(document).map(({ method, path }) => `${method} ${path}`);
    expect(mounted.length).toBeGreaterThan(80);
    expect(listed.sort()).toEqual(mounted.sort());
  });

  it("states each route's auth kind as its guard enforces it", async () => {
    const operations = operationsOf(document);
    expect(new Set(operations.map(({ operation }) => operation['x-keel-auth']))).toEqual(
      new Set(['none', 'any', 'board', 'agent', 'instance_admin', 'session', 'board_key', 'agent_run', 'challenge_secret', 'signature']));
    expect(await authMismatches(t.api, operations, { admin, board, agent })).toEqual([]);
  });

  it('names the credentials of each auth kind as security requirements', () => {
    const byPath = (method: string, path: string) => document.paths[path][method];
    expect(byPath('get', '/api/health').security).toEqual([]);
    expect(byPath('get', '/api/companies').security).toEqual([{ boardApiKey: [] }, { session: [] }]);
    expect(byPath('get', '/api/agents/me').security).toEqual([{ agentApiKey: [] }, { agentJwt: [] }]);
    expect(byPath('get', '/api/agents/me/secrets').security).toEqual([{ agentJwt: [] }]);
    for (const scheme of ['boardApiKey', 'session', 'agentApiKey', 'agentJwt', 'challengeSecret']) expect(document.components.securitySchemes[scheme]).toBeDefined();
    // On a local_trusted instance the local board needs no credential; agents still do.
    expect(securityOf('board', 'local_trusted')).toEqual([{ boardApiKey: [] }, { session: [] }, {}]);
    expect(securityOf('agent', 'local_trusted')).toEqual([{ agentApiKey: [] }, { agentJwt: [] }]);
  });

  it('refers every error answer to the one Error schema, which real error bodies satisfy', async () => {
    for (const { method, path, operation } of operationsOf(document)) {
      const errors = Object.entries<any>(operation.responses).filter(([status]) => status === 'default' || Number(status) >= 400);
      expect(errors.length, `${method} ${path}`).toBeGreaterThan(1);
      for (const [status, response] of errors) {
        const name = /^#\/components\/responses\/(\w+)$/.exec(response.$ref)?.[1];
        expect(name, `${method} ${path} ${status}`).toBeDefined();
        expect(document.components.responses[name!].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      }
    }
    expect(document.paths['/api/companies'].post.responses['400']).toEqual({ $ref: '#/components/responses/BadRequest' });
    expect(document.paths['/api/companies/{companyId}'].get.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });

    const resolved = await dereferenced(document);
    const check = addFormats(new Ajv({ strict: false, allErrors: true })).compile(resolved.components.schemas.Error);
    const answers = [
      await fetch(`${t.url}/api/companies`),
      await fetch(`${t.url}/api/companies/00000000-0000-4000-8000-000000000000`, { headers: { authorization: `Bearer ${admin}` } }),
      await fetch(`${t.url}/api/companies`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 7 }) }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([401, 404, 400]);
    for (const answer of answers) {
      const body = await answer.json();
      expect(check(body), JSON.stringify(check.errors)).toBe(true);
      expect(body.requestId).toBe(answer.headers.get('x-request-id'));
    }
  });

  it('documents the very schemas the route validators check', () => {
    let bodies = 0;
    let queries = 0;
    for (const layer of router().stack) {
      const { spec } = declarationOf(layer)!;
      const operation = document.paths[openApiPath(spec.path)][spec.method.toLowerCase()];
      if (spec.body) {
        bodies++;
        expect(operation.requestBody.content['application/json'].schema, `${spec.method} ${spec.path}`).toEqual(JSON.parse(JSON.stringify(spec.body.schema)));
      } else if (!spec.rawBody) {
        expect(operation.requestBody, `${spec.method} ${spec.path}`).toBeUndefined();
      }
      if (spec.query) {
        queries++;
        const properties = spec.query.schema.properties as Record<string, unknown>;
        const inQuery = operation.parameters.filter((parameter: any) => parameter.in === 'query' && parameter.name in properties);
        expect(Object.fromEntries(inQuery.map((parameter: any) => [parameter.name, parameter.schema]))).toEqual(JSON.parse(JSON.stringify(properties)));
      }
    }
    expect(bodies).toBeGreaterThan(30);
    expect(queries).toBeGreaterThan(3);
  });

  it('refuses a body that breaks a documented constraint with 400 validation_failed', async () => {
    const schema = document.paths['/api/companies'].post.requestBody.content['application/json'].schema;
    const longest = schema.properties.name.maxLength as number;
    expect(schema.required).toContain('name');
    expect((await t.api.post('/api/companies', { name: 'x'.repeat(longest) }, { token: admin })).status).toBe(201);
    const res = await t.api.post('/api/companies', { name: 'x'.repeat(longest + 1) }, { token: admin });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.issues.map((issue: any) => issue.path)).toEqual(['name']);
  });

  it('describes query parameters from the query validator', async () => {
    const parameter = document.paths['/api/companies'].get.parameters.find((p: any) => p.name === 'includeArchived');
    expect(parameter).toEqual({ name: 'includeArchived', in: 'query', required: false, schema: { type: 'boolean', default: false } });
    const res = await t.api.get('/api/companies?includeArchived=perhaps', { token: admin });
    expect([res.status, res.body.code, res.body.issues?.[0]?.path]).toEqual([400, 'validation_failed', 'includeArchived']);
  });

  it('names path parameters as OpenAPI templates and describes them', () => {
    const operation = document.paths['/api/companies/{companyId}/agents'].post;
    expect(operation.parameters).toContainEqual({ name: 'companyId', in: 'path', required: true, schema: { type: 'string' } });
    expect(operation.operationId).toBe('postCompaniesByCompanyIdAgents');
    expect(operation.tags).toEqual(['Agents']);
    expect(concretePath('/api/agents/{agentId}/keys/{keyId}')).not.toContain('{');
  });
});
