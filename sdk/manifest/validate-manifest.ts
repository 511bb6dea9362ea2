import { Ajv } from 'ajv';
import { pluginSchemaAjv } from './plugin-schema-ajv.ts';
import type { PluginManifest } from '../plugin/manifest.ts';
import { KERNEL_EVENT_NAMES } from './fragments.ts';
import { MANIFEST_SCHEMA } from './manifest-schema.ts';
import { isPrototypeMemberName, reservedKeyReason } from './reserved-keys.ts';
import { toolTextIssues } from './tool-text.ts';
import { declaredEventIssues } from './declared-events.ts';
import { subscriptionNameIssues } from './subscription-names.ts';
import { CAPABILITIES, type CapabilitySpec } from '../capabilities/index.ts';
import { isRootPath } from '../capabilities/http.ts';
import { schemaIssuesOf } from '../shared/validation-issues.ts';

export const MAX_MANIFEST_BYTES = 256 * 1024;

/** Per-plugin host routes that no plugin route may shadow. */
export const RESERVED_RELATIVE_PREFIXES = [
  '/health', '/logs', '/config', '/enable', '/disable', '/upgrade', '/jobs', '/job-queue', '/webhooks',
  '/dashboard', '/bridge', '/data', '/actions', '/tools',
];
const RESERVED_PATTERNS = [/^\/companies\/:[A-Za-z0-9]+\/local-folders(\/|$)/];

// verbose: errors carry the failing value and schema, which the wording of a refused key uses.
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const check = ajv.compile(MANIFEST_SCHEMA);
const schemaAjv = pluginSchemaAjv();


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
    const issues = schemaIssuesOf(check.errors, { root: '(manifest)', unknownField: 'is not a known manifest field' }).map(({ path, message }) => ({ path, message }));
    throw invalid(source, dedupe(issues));
  }
  const typed = manifest as PluginManifest;
  const issues: Array<{ path: string; message: string }> = [];
  const reserved = reservedKeyReason(typed.key);
  if (reserved) issues.push({ path: 'key', message: `"${typed.key}" is reserved (${reserved}); choose another key` });
  const declared = new Set(typed.capabilities.map((c) => c.id));
  // Each capability names the manifest fields that need it (sdk/capabilities).
  for (const capability of CAPABILITIES as readonly CapabilitySpec[]) {
    const serving = [capability.id, ...(capability.satisfiedAlsoBy ?? [])];
    if (serving.some((id) => declared.has(id as never))) continue;
    for (const path of capability.requiredBy?.(typed) ?? []) issues.push({ path, message: `needs the ${serving.join(' or ')} capability; declare it under capabilities` });
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
    for (const segment of normalisePath(route.path).split('/')) {
      // Parameters become property names of the request's params.
      if (segment.startsWith(':') && isPrototypeMemberName(segment.slice(1))) issues.push({ path: `routes.${index}.path`, message: `parameter ${segment} names a member every JavaScript object inherits; choose another name` });
    }
    if (route.absolute && isRootPath(route.path)) {
      // A public root route: the website's pages, never the API's namespace, never behind a credential.
      if (/^\/api(\/|$)/i.test(normalisePath(route.path))) issues.push({ path: `routes.${index}.path`, message: 'absolute paths under /api must start with /api/ and stay outside /api/plugins/' });
      if (route.auth !== 'none') issues.push({ path: `routes.${index}.auth`, message: "root paths outside /api/ are public: auth must be 'none'" });
    } else if (route.absolute) {
      if (!route.path.startsWith('/api/') || route.path.toLowerCase().startsWith('/api/plugins/') || route.path.toLowerCase() === '/api/plugins') issues.push({ path: `routes.${index}.path`, message: 'absolute paths must start with /api/ and stay outside /api/plugins/' });
    } else if (RESERVED_RELATIVE_PREFIXES.some((prefix) => route.path.toLowerCase() === prefix || route.path.toLowerCase().startsWith(`${prefix}/`))
      || RESERVED_PATTERNS.some((pattern) => pattern.test(normalisePath(route.path).toLowerCase()))) {
      issues.push({ path: `routes.${index}.path`, message: `shadows a host route of every plugin (${route.path})` });
    }
    if (route.perCompany) {
      if (route.auth !== 'instance_admin') issues.push({ path: `routes.${index}.perCompany`, message: 'needs auth instance_admin: only an instance admin may act in every company at once' });
      if ([route.companyParam, route.agentParam, route.entityParam, route.runParam, route.upload, route.download, route.batch, route.response?.stream].some(Boolean)) {
        issues.push({ path: `routes.${index}.perCompany`, message: 'cannot be combined with a company of its own (companyParam, agentParam, entityParam, runParam), upload, download, batch or a stream' });
      }
      // The selection is called serving no company: a declared route under that key would be served as a route too.
      if (route.perCompany.select !== undefined && typed.routes?.some((other) => other.key === route.perCompany!.select)) {
        issues.push({ path: `routes.${index}.perCompany.select`, message: `names a handler that is not a route of its own: ${route.perCompany.select} is a declared route` });
      }
    }
    if (route.batch && (route.method === 'GET' || route.readOnly || route.transactional === false)) {
      issues.push({ path: `routes.${index}.batch`, message: 'needs a mutating, transactional route' });
    }
    if (route.upload) {
      if (route.method !== 'POST' && route.method !== 'PUT') issues.push({ path: `routes.${index}.upload`, message: 'needs a POST or PUT route' });
      if (!(route.companyParam || route.agentParam)) issues.push({ path: `routes.${index}.upload`, message: 'needs a company (companyParam or agentParam): a blob belongs to one company' });
      if (route.body || route.batch) issues.push({ path: `routes.${index}.upload`, message: 'cannot be combined with a JSON body or batch' });
    }
    if (route.download) {
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
    if (route.companyField && [route.companyParam, route.agentParam, route.entityParam, route.runParam, route.perCompany].some(Boolean)) {
      issues.push({ path: `routes.${index}.companyField`, message: 'names the company itself: use one of companyParam, agentParam, entityParam, runParam and companyField' });
    }
    if (route.runParam) {
      if (!normalisePath(route.path).split('/').includes(`:${route.runParam}`)) issues.push({ path: `routes.${index}.runParam`, message: 'names a parameter that is not in the path' });
      if ([route.companyParam, route.agentParam, route.entityParam].some(Boolean)) {
        issues.push({ path: `routes.${index}.runParam`, message: 'names the company itself: use one of companyParam, agentParam, entityParam and runParam' });
      }
    }
    if (route.response?.maxStreams !== undefined && route.response.stream !== 'sse') {
      issues.push({ path: `routes.${index}.response.maxStreams`, message: "needs response.stream 'sse'" });
    }
    if (route.response?.stream === 'sse' && route.batch) {
      issues.push({ path: `routes.${index}.response.stream`, message: 'cannot be combined with batch: a batched answer is one JSON value' });
    }
    if (route.agentBodyField && (route.method === 'GET' || !(route.companyParam || route.agentParam || route.entityParam))) {
      issues.push({ path: `routes.${index}.agentBodyField`, message: 'needs a route with a body and a company (companyParam, agentParam or entityParam)' });
    }
    if (route.entityParam) {
      if ([route.companyParam, route.agentParam].some(Boolean)) issues.push({ path: `routes.${index}.entityParam`, message: 'names the company itself: use one of companyParam, agentParam and entityParam' });
      if (!(typed.database?.entities ?? []).some((entity) => entity.type === route.entityParam!.entity)) {
        issues.push({ path: `routes.${index}.entityParam.entity`, message: `is not declared under database.entities` });
      }
      if (!normalisePath(route.path).split('/').includes(`:${route.entityParam.param}`)) {
        issues.push({ path: `routes.${index}.entityParam.param`, message: `is not a parameter of the path` });
      }
    }
    if (route.proxy) {
      if (route.method !== 'POST') issues.push({ path: `routes.${index}.proxy`, message: 'needs a POST route' });
      if ([route.body, route.upload, route.download, route.batch, route.perCompany, route.response].some(Boolean)) {
        issues.push({ path: `routes.${index}.proxy`, message: 'cannot be combined with body, upload, download, batch, perCompany or response: the kernel reads the body and streams the answer itself' });
      }
    }
    for (const key of ['body', 'query'] as const) {
      if (route[key]) {
        try { schemaAjv.compile(route[key]!); } catch (error) { issues.push({ path: `routes.${index}.${key}`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
      }
    }
  }
  const entityTypes = new Set<string>();
  for (const [index, entity] of (typed.database?.entities ?? []).entries()) {
    if (entityTypes.has(entity.type)) issues.push({ path: `database.entities.${index}.type`, message: 'is declared twice' });
    entityTypes.add(entity.type);
  }
  for (const [index, tool] of (typed.tools ?? []).entries()) {
    try { schemaAjv.compile(tool.inputSchema); } catch (error) { issues.push({ path: `tools.${index}.inputSchema`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
  }
  // What agents are shown of a tool carries no hidden text (tag characters, bidi overrides, ...).
  issues.push(...toolTextIssues(typed.tools));
  for (const [index, service] of (typed.services?.provides ?? []).entries()) {
    for (const key of ['inputSchema', 'outputSchema'] as const) {
      if (!service[key]) continue;
      try { schemaAjv.compile(service[key]!); } catch (error) { issues.push({ path: `services.provides.${index}.${key}`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
    }
  }
  for (const [index, event] of (typed.events ?? []).entries()) {
    if (event.awaited && (event.mode !== 'after_commit' || !(KERNEL_EVENT_NAMES as readonly string[]).includes(event.event))) {
      issues.push({ path: `events.${index}.awaited`, message: 'only an after_commit subscription to a kernel event can be awaited' });
    }
    if (event.where && (event.mode !== 'after_commit' || event.awaited)) {
      issues.push({ path: `events.${index}.where`, message: 'only an after_commit subscription that is not awaited can filter its deliveries' });
    }
    if (event.mode === 'after_commit' && typed.events!.some((other, at) => at < index && other.event === event.event && other.mode === 'after_commit')) {
      issues.push({ path: `events.${index}.event`, message: 'is subscribed after_commit twice' });
    }
    if (event.mode === 'in_transaction' && !(KERNEL_EVENT_NAMES as readonly string[]).includes(event.event)) {
      issues.push({ path: `events.${index}.event`, message: 'in_transaction validators exist for kernel events only; subscribe to plugin events after_commit' });
    } else if (event.mode === 'in_transaction' && (event.event.startsWith('execution.') || event.event === 'proxy.finished')) {
      // Nothing vetoes an execution's output or end: they reach only the starting plugin, after commit.
      issues.push({ path: `events.${index}.event`, message: 'execution and proxy events cannot be vetoed; subscribe to them after_commit' });
    }
  }
  const jobKeys = new Set((typed.jobs ?? []).map((job) => job.key));
  for (const [index, folder] of (typed.folders ?? []).entries()) {
    if (folder.onChange && !jobKeys.has(folder.onChange.job)) issues.push({ path: `folders.${index}.onChange.job`, message: 'names no job declared under jobs' });
  }
  const provided = new Set((typed.services?.provides ?? []).map((service) => service.key));
  const answered = new Set<string>();
  for (const [index, point] of (typed.kernelPoints ?? []).entries()) {
    if (!provided.has(point.service)) issues.push({ path: `kernelPoints.${index}.service`, message: `names no service under services.provides` });
    if (answered.has(point.point)) issues.push({ path: `kernelPoints.${index}.point`, message: 'is answered twice' });
    answered.add(point.point);
  }
  if (typed.portability) {
    for (const field of ['exportService', 'importService'] as const) {
      if (!provided.has(typed.portability[field])) issues.push({ path: `portability.${field}`, message: 'names no service under services.provides' });
    }
  }
  const published = new Set<string>();
  for (const [index, event] of (typed.publishedEvents ?? []).entries()) {
    if (!event.name.startsWith(`${typed.key}.`)) issues.push({ path: `publishedEvents.${index}.name`, message: `must start with the plugin key: ${typed.key}.<name>` });
    if (published.has(event.name)) issues.push({ path: `publishedEvents.${index}.name`, message: 'is declared twice' });
    published.add(event.name);
    try { schemaAjv.compile(event.schema); } catch (error) { issues.push({ path: `publishedEvents.${index}.schema`, message: `is not a valid JSON schema: ${(error as Error).message}` }); }
  }
  issues.push(...declaredEventIssues(typed));
  // A subscription names an event that can exist (a kernel event, its own, a declared publisher's).
  issues.push(...subscriptionNameIssues(typed));
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

export interface ManifestIssue { path: string; message: string }

/** A manifest that failed validation: the one-line message plus every issue, field by field (the host answers it as 422 invalid_manifest). */
export class InvalidManifestError extends Error {
  readonly status = 422;
  readonly code = 'invalid_manifest';
  readonly issues: ManifestIssue[];
  constructor(message: string, issues: ManifestIssue[]) {
    super(message);
    this.name = 'InvalidManifestError';
    this.issues = issues;
  }
}

function invalid(source: string, issues: ManifestIssue[]): InvalidManifestError {
  const first = issues[0]!;
  return new InvalidManifestError(`Invalid manifest ${source}: ${first.path} ${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`, issues);
}
