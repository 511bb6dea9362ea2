import { Ajv } from 'ajv';
import { pluginSchemaAjv } from './plugin-schema-ajv.ts';
import type { PluginManifest } from '../../../sdk/plugin/manifest.ts';
import { KeelError } from '../../http/errors.ts';
import { manifestSchema } from './fragments.ts';
import { reservedKeyReason } from './reserved-keys.ts';

export const MAX_MANIFEST_BYTES = 256 * 1024;

/** Per-plugin host routes that no plugin route may shadow. */
export const RESERVED_RELATIVE_PREFIXES = [
  '/health', '/logs', '/config', '/enable', '/disable', '/upgrade', '/jobs', '/webhooks',
  '/dashboard', '/bridge', '/data', '/actions', '/tools',
];
const RESERVED_PATTERNS = [/^\/companies\/:[A-Za-z0-9]+\/local-folders(\/|$)/];

const ajv = new Ajv({ allErrors: true, strict: false });
const check = ajv.compile(manifestSchema);
const schemaAjv = pluginSchemaAjv();

/** Which capability a contribution needs; declaring one without it is a manifest error. */
const NEEDS: Array<[keyof PluginManifest, string]> = [
  ['routes', 'http.routes'], ['tools', 'tools.register'], ['jobs', 'jobs.schedule'], ['webhooks', 'webhooks.receive'],
  ['folders', 'local.folders'], ['network', 'http.fetch'],
];

/**
 * Validates a manifest (text or parsed) and returns it typed. Every problem is reported in
 * one 422 `invalid_manifest` with `issues` naming the field; unknown fields are named too.
 */
export function validateManifest(input: string | unknown, source = 'plugin.json'): PluginManifest {
  let manifest: unknown = input;
  if (typeof input === 'string') {
    if (Buffer.byteLength(input) > MAX_MANIFEST_BYTES) throw invalid(source, [{ path: '(manifest)', message: `exceeds ${MAX_MANIFEST_BYTES} bytes` }]);
    try { manifest = JSON.parse(input); } catch (error) {
      throw invalid(source, [{ path: '(manifest)', message: `is not valid JSON: ${(error as Error).message}` }]);
    }
  } else if (JSON.stringify(input ?? null).length > MAX_MANIFEST_BYTES) {
    throw invalid(source, [{ path: '(manifest)', message: `exceeds ${MAX_MANIFEST_BYTES} bytes` }]);
  }
  if (!check(manifest)) {
    const issues = (check.errors ?? []).map((error) => {
      const base = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
      if (error.keyword === 'additionalProperties') {
        const field = (error.params as { additionalProperty: string }).additionalProperty;
        return { path: base ? `${base}.${field}` : field, message: 'is not a known manifest field' };
      }
      if (error.keyword === 'required') {
        const field = (error.params as { missingProperty: string }).missingProperty;
        return { path: base ? `${base}.${field}` : field, message: 'is required' };
      }
      return { path: base || '(manifest)', message: error.message ?? 'is invalid' };
    });
    throw invalid(source, dedupe(issues));
  }
  const typed = manifest as PluginManifest;
  const issues: Array<{ path: string; message: string }> = [];
  const reserved = reservedKeyReason(typed.key);
  if (reserved) issues.push({ path: 'key', message: `"${typed.key}" is reserved (${reserved}); choose another key` });
  const declared = new Set(typed.capabilities.map((c) => c.id));
  for (const [field, capability] of NEEDS) {
    const value = typed[field];
    if (value && (!Array.isArray(value) || value.length > 0) && !declared.has(capability as never)) {
      issues.push({ path: field, message: `needs the ${capability} capability; declare it under capabilities` });
    }
  }
  if (typed.database && ![...declared].some((c) => c.startsWith('database.namespace.'))) {
    issues.push({ path: 'database', message: 'needs a database.namespace.* capability' });
  }
  // Files named by the manifest stay inside the plugin folder.
  for (const [field, value] of [['entry', typed.entry], ['database.migrations', typed.database?.migrations]] as const) {
    if (value !== undefined && (value.startsWith('/') || value.split('/').includes('..'))) issues.push({ path: field, message: 'must be a path inside the plugin folder (no leading / and no ..)' });
  }
  const seen = new Set<string>();
  for (const [index, route] of (typed.routes ?? []).entries()) {
    const signature = `${route.method} ${normalisePath(route.path)} ${route.absolute ? 'abs' : 'rel'}`;
    if (seen.has(signature)) issues.push({ path: `routes.${index}`, message: `duplicates ${route.method} ${route.path}` });
    seen.add(signature);
    if (/(^|\/)\.{1,2}(\/|$)|\/\//.test(route.path)) issues.push({ path: `routes.${index}.path`, message: 'must not contain . or .. segments or empty segments' });
    if (route.absolute) {
      if (!declared.has('http.routes.absolute')) issues.push({ path: `routes.${index}.absolute`, message: 'needs the http.routes.absolute capability' });
      if (!route.path.startsWith('/api/') || route.path.toLowerCase().startsWith('/api/plugins/') || route.path.toLowerCase() === '/api/plugins') issues.push({ path: `routes.${index}.path`, message: 'absolute paths must start with /api/ and stay outside /api/plugins/' });
    } else if (RESERVED_RELATIVE_PREFIXES.some((prefix) => route.path.toLowerCase() === prefix || route.path.toLowerCase().startsWith(`${prefix}/`))
      || RESERVED_PATTERNS.some((pattern) => pattern.test(normalisePath(route.path).toLowerCase()))) {
      issues.push({ path: `routes.${index}.path`, message: `shadows a host route of every plugin (${route.path})` });
    }
    if (route.batch && (route.method === 'GET' || route.readOnly || route.transactional === false)) {
      issues.push({ path: `routes.${index}.batch`, message: 'needs a mutating, transactional route' });
    }
    if (route.upload) {
      if (!declared.has('blobs.write')) issues.push({ path: `routes.${index}.upload`, message: 'needs the blobs.write capability' });
      if (route.method !== 'POST' && route.method !== 'PUT') issues.push({ path: `routes.${index}.upload`, message: 'needs a POST or PUT route' });
      if (!(route.companyParam || route.agentParam)) issues.push({ path: `routes.${index}.upload`, message: 'needs a company (companyParam or agentParam): a blob belongs to one company' });
      if (route.body || route.batch) issues.push({ path: `routes.${index}.upload`, message: 'cannot be combined with a JSON body or batch' });
    }
    if (route.download) {
      if (!declared.has('blobs.read') && !declared.has('blobs.write')) issues.push({ path: `routes.${index}.download`, message: 'needs the blobs.read capability' });
      if (route.method !== 'GET') issues.push({ path: `routes.${index}.download`, message: 'needs a GET route' });
    }
    if (route.companyParam && !normalisePath(route.path).includes(`:${route.companyParam}`)) {
      issues.push({ path: `routes.${index}.companyParam`, message: `names a parameter that is not in the path` });
    }
    if (route.agentParam && !normalisePath(route.path).includes(`:${route.agentParam}`)) {
      issues.push({ path: `routes.${index}.agentParam`, message: `names a parameter that is not in the path` });
    }
    if (route.agentParam && route.companyParam) {
      issues.push({ path: `routes.${index}.agentParam`, message: 'cannot be combined with companyParam: the agent names the company' });
    }
    if (route.agentBodyField && (route.method === 'GET' || !(route.companyParam || route.agentParam))) {
      issues.push({ path: `routes.${index}.agentBodyField`, message: 'needs a route with a body and a company (companyParam or agentParam)' });
    }
    for (const key of ['body', 'query'] as const) {
      if (route[key]) {
        try { schemaAjv.compile(route[key]!); } catch (error) { issues.push({ path: `routes.${index}.${key}`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
      }
    }
  }
  for (const [index, tool] of (typed.tools ?? []).entries()) {
    try { schemaAjv.compile(tool.inputSchema); } catch (error) { issues.push({ path: `tools.${index}.inputSchema`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
  }
  for (const [index, service] of (typed.services?.provides ?? []).entries()) {
    for (const key of ['inputSchema', 'outputSchema'] as const) {
      if (!service[key]) continue;
      try { schemaAjv.compile(service[key]!); } catch (error) { issues.push({ path: `services.provides.${index}.${key}`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
    }
  }
  for (const [index, event] of (typed.events ?? []).entries()) {
    const needed = event.mode === 'in_transaction' ? 'events.hooks' : 'events.subscribe';
    if (!declared.has(needed as never)) issues.push({ path: `events.${index}.mode`, message: `needs the ${needed} capability` });
  }
  if (typed.ui?.pages?.length && !declared.has('ui.page.register')) issues.push({ path: 'ui.pages', message: 'needs the ui.page.register capability' });
  if ((typed.ui?.slots?.length || typed.ui?.launchers?.length) && !declared.has('ui.slots')) issues.push({ path: 'ui.slots', message: 'needs the ui.slots capability' });
  if (typed.services?.provides?.length && !declared.has('services.provide')) issues.push({ path: 'services.provides', message: 'needs the services.provide capability' });
  if (typed.services?.consumes?.length && !declared.has('services.consume')) issues.push({ path: 'services.consumes', message: 'needs the services.consume capability' });
  if (issues.length) throw invalid(source, issues);
  return typed;
}

/** `{name}` and `:name` are the same parameter syntax. */
export function normalisePath(path: string): string {
  return path.replace(/\{([A-Za-z][A-Za-z0-9]*)\}/g, ':$1');
}

function dedupe(issues: Array<{ path: string; message: string }>) {
  const seen = new Set<string>();
  return issues.filter((issue) => { const key = `${issue.path} ${issue.message}`; if (seen.has(key)) return false; seen.add(key); return true; });
}

function invalid(source: string, issues: Array<{ path: string; message: string }>): KeelError {
  const first = issues[0]!;
  return new KeelError(422, 'invalid_manifest', `Invalid manifest ${source}: ${first.path} ${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`, { issues });
}
