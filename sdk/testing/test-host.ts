import { randomUUID } from 'node:crypto';
import { pluginSchemaAjv } from '../build/validate-manifest.ts';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPlugin } from '../build/build-plugin.ts';
import { checkManifest } from '../build/validate-manifest.ts';
import type { InvocationInfo, RouteRequest } from '../plugin/context.ts';
import type { PluginManifest, RouteManifest } from '../plugin/manifest.ts';
import type { RecordedActivity } from './capabilities.ts';
import { errorAnswer, successAnswer, validateInput, verifyWebhook, webhookSignature, type RouteAnswer } from './contributions.ts';
import { PluginCallError } from './errors.ts';
import { FakeDatabase } from './fake-database.ts';
import { FakeFolders } from './fake-folders.ts';
import { FakeHttp } from './fake-http.ts';
import { FakeKernel, type KernelFake, type KernelMethod } from './fake-kernel.ts';
import { IsolateRunner, type LogLine } from './isolate-runner.ts';

export interface TestHostOptions {
  /** Instance configuration; validated against the manifest's config schema (defaults applied). */
  config?: Record<string, unknown>;
  /**
   * Capabilities the operator grants; default: every capability the manifest declares (the real
   * host runs a plugin only with all of them). Code typed for one left out (its plugin.gen.ts)
   * is refused on every call with 500 capability_not_granted, as the runtime does.
   */
  grants?: string[];
  /** Company of calls that name none (routes without a company parameter, tools, jobs). Default null. */
  companyId?: string | null;
  /** Who calls; default a board user. */
  actor?: InvocationInfo['actor'];
  runId?: string | null;
  /** Kernel capability fakes, e.g. `{ 'companies.get': ([id]) => ({ id, name: 'Acme' }) }`. */
  kernel?: Partial<Record<KernelMethod, KernelFake>>;
  limits?: { memoryMb?: number; callTimeoutMs?: number };
}

/** Who a single call is for; each field overrides the host's default. */
export interface CallOptions { companyId?: string | null; actor?: InvocationInfo['actor']; runId?: string | null; event?: InvocationInfo['event'] }
export interface RouteCall extends CallOptions {
  params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown; headers?: Record<string, string>;
  /** For a route declared `upload`: the metadata the host would hand over after storing the file. */
  upload?: RouteRequest['upload'];
}
export interface WebhookCall { body: string | object; headers?: Record<string, string> }

/** A route call that passed the host's checks: what the plugin receives. */
interface PreparedRoute {
  route: RouteManifest;
  request: RouteRequest;
  transactional: boolean;
  defaultActivity: { action: string; entityType: string; entityId: string } | null;
}

const DEFAULT_ACTOR: InvocationInfo['actor'] = { type: 'user', id: 'test-board', agentId: null };
// The identities the host's scheduler, webhook receiver and event bus call with.
const SCHEDULER_ACTOR: InvocationInfo['actor'] = { type: 'system', id: 'scheduler', agentId: null };
const WEBHOOK_ACTOR: InvocationInfo['actor'] = { type: 'system', id: 'webhook', agentId: null };
const EVENTS_ACTOR: InvocationInfo['actor'] = { type: 'system', id: 'events', agentId: null };
const configAjv = pluginSchemaAjv({ allErrors: true, useDefaults: true });

/**
 * Builds the plugin folder with sdk/build and runs the bundle in a real isolate against an
 * in-memory host: no PostgreSQL, no kernel, no network. See sdk/testing/README.md.
 */
export async function createTestHost(folder: string | URL, options: TestHostOptions = {}): Promise<TestHost> {
  const root = folder instanceof URL ? fileURLToPath(folder) : resolve(folder);
  const manifestPath = join(root, 'plugin.json');
  const manifest = checkManifest(await readFile(manifestPath, 'utf8'), manifestPath);
  const built = await buildPlugin(root);
  return new TestHost(manifest, built.code, options);
}

export class TestHost {
  readonly manifest: PluginManifest;
  readonly grants: readonly string[];
  /** `ctx.db`: register query handlers with `host.db.on(pattern, handler)`. */
  readonly db: FakeDatabase;
  /** `ctx.http.fetch`: register answers with `host.http.route(url, response)`. */
  readonly http: FakeHttp;
  /** `ctx.folders`: in-memory files per declared mount. */
  readonly folders: FakeFolders;
  /** Kernel-served capabilities: `host.kernel.on('agents.get', fn)`. */
  readonly kernel: FakeKernel;
  /** Activity entries of calls that succeeded (and of failed non-transactional ones), in order. */
  readonly activity: RecordedActivity[] = [];
  readonly logs: LogLine[] = [];
  config: Record<string, unknown>;
  private readonly defaults: Required<Pick<TestHostOptions, 'companyId' | 'actor' | 'runId'>>;
  private readonly runner: IsolateRunner;

  constructor(manifest: PluginManifest, code: string, options: TestHostOptions) {
    this.manifest = manifest;
    const declared = manifest.capabilities.map((c) => c.id as string);
    const grants = options.grants ?? declared;
    const undeclared = grants.filter((id) => !declared.includes(id));
    if (undeclared.length) throw new PluginCallError(422, 'capability_not_declared', `${manifest.key} does not declare ${undeclared.join(', ')}; only declared capabilities can be granted`);
    this.grants = Object.freeze([...grants]);
    this.config = this.checkedConfig(options.config ?? {});
    this.defaults = { companyId: options.companyId ?? null, actor: options.actor ?? DEFAULT_ACTOR, runId: options.runId ?? null };
    this.db = new FakeDatabase();
    this.http = new FakeHttp(manifest.network?.allow ?? []);
    this.folders = new FakeFolders(manifest.folders ?? []);
    this.kernel = new FakeKernel(options.kernel);
    this.runner = new IsolateRunner({
      pluginKey: manifest.key, code, grants: this.grants, config: this.config,
      memoryMb: options.limits?.memoryMb ?? manifest.limits?.memoryMb ?? 64,
      callTimeoutMs: options.limits?.callTimeoutMs ?? manifest.limits?.callTimeoutMs ?? 10_000,
      services: { grants: this.grants, db: this.db, http: this.http, folders: this.folders, kernel: this.kernel },
      onLog: (line) => this.logs.push(line),
    });
  }

  /** How often the isolate was replaced after a timeout or out-of-memory. */
  get restarts(): number {
    return this.runner.restarts;
  }

  /** Calls a route by its manifest key, after the host's checks (grant, schemas); answers like HTTP would. */
  async callRoute(key: string, call: RouteCall = {}): Promise<RouteAnswer> {
    const prepared = this.prepareRoute(key, call);
    if ('answer' in prepared) return prepared.answer;
    const { route, request, transactional, defaultActivity } = prepared;
    try {
      const value = await this.invoke('route', route.key, request, { ...call, companyId: request.companyId }, transactional, defaultActivity);
      return successAnswer(value, route.successStatus ?? 200, route.response);
    } catch (error) {
      if (error instanceof PluginCallError) return errorAnswer(error);
      throw error;
    }
  }

  /**
   * Calls a batched route with several calls at once, as concurrent requests would arrive in
   * one group commit: the plugin's `batches[key]` handler answers them all (each call with its
   * own identity and activity). Without a batch handler, or when it throws, each call runs
   * alone through `routes[key]`, as the host falls back. Answers in call order.
   */
  async callBatch(key: string, calls: RouteCall[]): Promise<RouteAnswer[]> {
    const answers: Array<RouteAnswer | undefined> = new Array(calls.length).fill(undefined);
    const ready: Array<{ index: number; prepared: PreparedRoute; info: InvocationInfo }> = [];
    calls.forEach((call, index) => {
      const prepared = this.prepareRoute(key, call);
      if ('answer' in prepared) { answers[index] = prepared.answer; return; }
      if (!prepared.route.batch) throw new Error(`Route "${key}" is not batched in plugin.json`);
      ready.push({ index, prepared, info: this.invocationInfo('route', key, { ...call, companyId: prepared.request.companyId }) });
    });
    if (ready.length === 0) return answers as RouteAnswer[];
    const lead = { ...ready[0]!.info, id: randomUUID(), kind: 'route_batch' as const };
    const outcome = await this.runner.runBatch(lead, ready.map(({ info, prepared }) => ({ info, input: prepared.request })), true);
    if (!outcome.ok || !Array.isArray(outcome.answers) || outcome.answers.length !== ready.length) {
      for (const { index } of ready) answers[index] = await this.callRoute(key, calls[index]!);
      return answers as RouteAnswer[];
    }
    ready.forEach(({ index, prepared, info }, position) => {
      const answer = outcome.answers![position]!;
      if (!answer.ok) {
        const e = answer.e ?? { status: 500, code: 'plugin_error', message: 'Plugin failed' };
        answers[index] = errorAnswer(new PluginCallError(e.status, e.code, e.message, { details: e.details, issues: e.issues }));
        return;
      }
      const recorded = outcome.activity[position]!;
      this.activity.push(...recorded);
      if (recorded.length === 0 && prepared.defaultActivity) {
        this.activity.push({ ...prepared.defaultActivity, details: null, companyId: info.companyId, actor: info.actor, runId: info.runId, invocationId: info.id, byHost: true });
      }
      answers[index] = successAnswer(answer.v, prepared.route.successStatus ?? 200);
    });
    return answers as RouteAnswer[];
  }

  /** The host's checks of one route call (grant, company, schemas): the request to send, or the answer already given. */
  private prepareRoute(key: string, call: RouteCall): { answer: RouteAnswer } | PreparedRoute {
    const route = this.manifest.routes?.find((r) => r.key === key);
    if (!route) throw new Error(`${this.manifest.key} declares no route "${key}" in plugin.json`);
    const fullPath = route.absolute ? route.path : `/api/plugins/${this.manifest.key}${route.path}`;
    if (!this.has('http.routes') || (route.absolute && !this.has('http.routes.absolute'))) {
      return { answer: errorAnswer(new PluginCallError(404, 'not_found', `Route ${route.method} ${fullPath} is not mounted: ${route.absolute ? 'http.routes.absolute' : 'http.routes'} is not granted`)) };
    }
    const params = { ...call.params };
    let companyId = call.companyId !== undefined ? call.companyId : this.defaults.companyId;
    if (route.companyParam) {
      companyId = params[route.companyParam] ?? null;
      if (!companyId) throw new Error(`Route "${key}" takes its company from params.${route.companyParam}; pass it in params`);
    }
    const query = { ...call.query };
    let body: unknown = null;
    try {
      validateInput(route.query, query, 'query', true);
      if (route.method !== 'GET') {
        body = call.body === undefined ? (route.body ? {} : null) : structuredClone(call.body);
        validateInput(route.body, body, 'request body');
      }
    } catch (error) {
      return { answer: errorAnswer(error as PluginCallError) };
    }
    const headers = Object.fromEntries(Object.entries(call.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    const transactional = route.transactional ?? route.method !== 'GET';
    const defaultActivity = route.method === 'GET' ? null : { action: `plugin.${this.manifest.key}.${route.key}`, entityType: 'plugin_route', entityId: `${route.method} ${fullPath}` };
    const request: RouteRequest = call.upload ? { params, query, body, headers, companyId, upload: call.upload } : { params, query, body, headers, companyId };
    return { route, request, transactional, defaultActivity };
  }

  /** Runs a tool as POST /api/plugins/tools/execute would; resolves its result or rejects with PluginCallError. */
  async callTool(key: string, input: unknown = {}, call: CallOptions = {}): Promise<unknown> {
    const tool = this.manifest.tools?.find((t) => t.key === key);
    if (!tool) throw new Error(`${this.manifest.key} declares no tool "${key}" in plugin.json`);
    if (!this.has('tools.register')) throw new PluginCallError(404, 'tool_not_found', `No enabled tool "${this.manifest.key}.${key}": tools.register is not granted`);
    const copy = structuredClone(input);
    validateInput(tool.inputSchema, copy, 'tool input');
    return this.invoke('tool', key, copy, call, true, { action: `plugin.${this.manifest.key}.tool.${key}`, entityType: 'plugin_tool', entityId: `${this.manifest.key}.${key}` });
  }

  /**
   * Runs a job once, as the scheduler or a manual trigger would (system actor). A job serves no
   * company; a `perCompany` job is run by the host once per company, so a test names the one
   * to run it for (`{ companyId }`).
   */
  async runJob(key: string, call: CallOptions = {}): Promise<unknown> {
    const job = this.manifest.jobs?.find((j) => j.key === key);
    if (!job) throw new Error(`${this.manifest.key} declares no job "${key}" in plugin.json`);
    if (!this.has('jobs.schedule')) throw new PluginCallError(404, 'job_not_found', `Job "${key}" is not scheduled: jobs.schedule is not granted`);
    if (job.perCompany === true && !call.companyId) throw new Error(`Job "${key}" is perCompany: pass { companyId } to run it for one company, as the host does for each`);
    if (job.perCompany !== true && call.companyId) throw new Error(`Job "${key}" serves no company (it is not perCompany); the host never runs it for one`);
    return this.invoke('job', key, null, { actor: SCHEDULER_ACTOR, companyId: null, ...call }, true, null);
  }

  /**
   * Runs an enqueued job once, as the host runs what `ctx.jobs.enqueue(key, payload)` queued: with
   * its payload, in the company of the call that enqueued it (`{ companyId }`). Fake `jobs.enqueue`
   * (host.kernel.on) to capture what a handler enqueues, then pass it here.
   */
  async runEnqueuedJob(key: string, payload: unknown, call: CallOptions = {}): Promise<unknown> {
    if (!this.manifest.jobs?.some((j) => j.key === key)) throw new Error(`${this.manifest.key} declares no job "${key}" in plugin.json`);
    if (!this.has('jobs.enqueue')) throw new PluginCallError(403, 'capability_denied', `Job "${key}" cannot be enqueued: jobs.enqueue is not granted`);
    return this.invoke('job', key, structuredClone(payload ?? null), { actor: { type: 'system', id: 'job-queue', agentId: null }, companyId: null, ...call }, true, null);
  }

  /**
   * Delivers an event to the plugin's subscriber (after_commit) or validator (in_transaction).
   * Resolves false when the plugin does not receive it (not subscribed, or not granted); a
   * validator that throws rejects, as its veto would roll the kernel's change back. A subscriber
   * gets the event envelope in ctx.invocation.event (pass `call.event` to redeliver one: the
   * real host delivers at least once, so test that the handler is idempotent by its id).
   */
  async dispatchEvent(name: string, payload: Record<string, unknown> = {}, call: CallOptions = {}): Promise<boolean> {
    const subscription = this.manifest.events?.find((e) => e.event === name);
    if (!subscription) return false;
    const hook = subscription.mode === 'in_transaction';
    if (!this.has(hook ? 'events.hooks' : 'events.subscribe')) return false;
    // As the event bus does: the company is the one the event names.
    const companyId = call.companyId !== undefined ? call.companyId : typeof payload.companyId === 'string' ? payload.companyId : null;
    const entity = name.startsWith('agent.') ? { entityType: 'agent', entityId: String(payload.agentId ?? '') } : { entityType: 'company', entityId: String(payload.companyId ?? '') };
    const event = hook ? undefined : call.event ?? { id: randomUUID(), name, publisher: name.startsWith('company.') || name.startsWith('agent.') ? 'kernel' : name.split('.')[0]!, companyId, ...entity, occurredAt: new Date().toISOString(), attempt: 1 };
    await this.invoke(hook ? 'hook' : 'event', name, payload, { actor: EVENTS_ACTOR, ...call, companyId, event }, true, null);
    return true;
  }

  /** Delivers an inbound webhook; a declared signature is verified first, as the host does before the body is read. */
  async deliverWebhook(key: string, call: WebhookCall): Promise<RouteAnswer> {
    const webhook = this.manifest.webhooks?.find((w) => w.key === key);
    if (!webhook) throw new Error(`${this.manifest.key} declares no webhook "${key}" in plugin.json`);
    if (!this.has('webhooks.receive')) return errorAnswer(new PluginCallError(404, 'not_found', `Webhook ${key} is not mounted: webhooks.receive is not granted`));
    const body = typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
    const headers = Object.fromEntries(Object.entries(call.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    if (webhook.signature) {
      const refused = verifyWebhook(webhook, this.config, headers, body);
      if (refused) return errorAnswer(refused);
    }
    try {
      const value = await this.invoke('webhook', key, { headers, body, verified: Boolean(webhook.signature) }, { actor: WEBHOOK_ACTOR, companyId: null }, true, null);
      return successAnswer(value, 200);
    } catch (error) {
      if (error instanceof PluginCallError) return errorAnswer(error);
      throw error;
    }
  }

  /** Headers that sign `body` for the webhook with the configured secret (and the current time, when it declares a timestamp header). */
  signWebhook(key: string, body: string | object, options: { secret?: string; timestamp?: number } = {}): Record<string, string> {
    const signature = this.manifest.webhooks?.find((w) => w.key === key)?.signature;
    if (!signature) throw new Error(`Webhook "${key}" declares no signature`);
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const secret = options.secret ?? String(this.config[signature.secretConfigKey] ?? '');
    const timestamp = signature.timestampHeader ? String(options.timestamp ?? Math.floor(Date.now() / 1000)) : undefined;
    const headers: Record<string, string> = { [signature.header.toLowerCase()]: webhookSignature(secret, text, timestamp) };
    if (signature.timestampHeader) headers[signature.timestampHeader.toLowerCase()] = timestamp!;
    return headers;
  }

  /** A UI data read (what a slot's `dataKey` names), as POST /api/plugins/{key}/data/{dataKey} sends it: `{params, companyId}`. */
  callData(key: string, params: unknown = null, call: CallOptions = {}): Promise<unknown> {
    const companyId = call.companyId !== undefined ? call.companyId : this.defaults.companyId;
    return this.invoke('data', key, { params, companyId }, { ...call, companyId }, false, null);
  }

  /** A UI action (what a launcher's `action` names), in a transaction, as POST /api/plugins/{key}/actions/{action} sends it. */
  callAction(key: string, params: unknown = null, call: CallOptions = {}): Promise<unknown> {
    const companyId = call.companyId !== undefined ? call.companyId : this.defaults.companyId;
    return this.invoke('action', key, { params, companyId }, { ...call, companyId }, true,
      { action: `plugin.${this.manifest.key}.action.${key}`, entityType: 'plugin_action', entityId: key });
  }

  /** The plugin's own verdict on a candidate configuration (its validateConfig, or ok). */
  async validateConfig(config: Record<string, unknown>): Promise<{ ok: boolean; errors: string[] }> {
    const verdict = await this.invoke('validate_config', 'validateConfig', config, {}, false, null) as { ok?: boolean; errors?: string[] } | null;
    return { ok: verdict?.ok !== false, errors: verdict?.errors ?? [] };
  }

  /** Replaces the configuration, as POST /api/plugins/{key}/config does, without restarting the isolate. */
  setConfig(config: Record<string, unknown>): void {
    this.config = this.checkedConfig(config);
    this.runner.updateConfig(this.config);
  }

  dispose(): void {
    this.runner.dispose();
  }

  private has(grant: string): boolean {
    return this.grants.includes(grant);
  }

  private checkedConfig(config: Record<string, unknown>): Record<string, unknown> {
    const copy = structuredClone(config);
    const schema = this.manifest.config?.schema;
    if (schema) {
      const check = configAjv.compile(schema);
      if (!check(copy)) {
        const issue = check.errors![0]!;
        throw new PluginCallError(400, 'invalid_plugin_config', `Invalid plugin configuration: ${issue.instancePath.replace(/^\//, '').replaceAll('/', '.') || '(config)'} ${issue.message ?? 'is invalid'}`);
      }
    }
    return copy;
  }

  private invocationInfo(kind: InvocationInfo['kind'], target: string, call: CallOptions): InvocationInfo {
    return {
      id: randomUUID(), kind, target,
      companyId: call.companyId !== undefined ? call.companyId : this.defaults.companyId,
      actor: call.actor ?? this.defaults.actor,
      runId: call.runId !== undefined ? call.runId : this.defaults.runId,
      ...(call.event ? { event: call.event } : {}),
    };
  }

  private async invoke(kind: InvocationInfo['kind'], target: string, input: unknown, call: CallOptions, transactional: boolean, defaultActivity: { action: string; entityType: string; entityId: string } | null): Promise<unknown> {
    const info = this.invocationInfo(kind, target, call);
    const outcome = await this.runner.run(info, input, transactional);
    this.activity.push(...outcome.activity);
    if (outcome.ok && outcome.activity.length === 0 && defaultActivity) {
      this.activity.push({ ...defaultActivity, details: null, companyId: info.companyId, actor: info.actor, runId: info.runId, invocationId: info.id, byHost: true });
    }
    if (!outcome.ok) throw outcome.error!;
    return outcome.value;
  }
}
