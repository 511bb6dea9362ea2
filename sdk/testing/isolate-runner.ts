import type { InvocationInfo } from '../plugin/context.ts';
import { checkCapabilityCall, parseCallArguments } from '../capabilities/check-call.ts';
import { serveCall, type CapabilityServices, type RecordedActivity } from './capabilities.ts';
import { CapabilityFault, PluginCallError } from './errors.ts';
import { Sandbox } from './host-shared.ts';

/** A failed answer as the isolate wrote it. */
interface WireFailure { status: number; code: string; message: string; details?: unknown; issues?: Array<{ path: string | Array<string | number>; message: string }> }

export interface LogLine { at: string; level: string; message: string; fields?: Record<string, unknown>; invocationId?: string }

export interface RunnerOptions {
  pluginKey: string;
  code: string;
  grants: readonly string[];
  config: Record<string, unknown>;
  memoryMb: number;
  callTimeoutMs: number;
  services: CapabilityServices;
  onLog(line: LogLine): void;
}

/** How one call ended; `activity` holds what it recorded (already dropped when a transactional call failed). */
export interface RunOutcome { ok: boolean; value?: unknown; error?: PluginCallError; activity: RecordedActivity[] }

interface Running {
  info: InvocationInfo;
  transactional: boolean;
  finished: boolean;
  activity: RecordedActivity[];
  timer?: NodeJS.Timeout;
  resolve(outcome: RunOutcome): void;
}

/** How a batch handler's call ended: its per-call answers, and what each call's ctx recorded. */
export interface BatchOutcome {
  ok: boolean;
  answers?: Array<{ ok: boolean; v?: unknown; e?: WireFailure }>;
  error?: PluginCallError;
  activity: RecordedActivity[][];
}

/**
 * The worker's half of the protocol, in the test process: the plugin bundle runs in a real
 * isolated-vm isolate behind the same bridge (`__keel_host.call/done/log`), asynchronous
 * capability work is settled into the isolate later, a call that outlives its deadline fails
 * and the isolate is replaced, and a finished invocation's `ctx` is refused. Capability calls
 * are checked against the grants and served by the fakes instead of PostgreSQL and the kernel.
 */
export class IsolateRunner {
  restarts = 0;
  private readonly options: RunnerOptions;
  private sandbox!: Sandbox;
  private config: Record<string, unknown>;
  private readonly running = new Map<string, Running>();
  private nextOp = 1;
  /** Answers given during the current entry into the isolate (null outside one), see enter. */
  private answered: Array<{ running: Running; result: { ok: boolean; v?: unknown; e?: WireFailure } }> | null = null;

  constructor(options: RunnerOptions) {
    this.options = options;
    this.config = options.config;
    this.load();
  }

  private load(): void {
    const sandbox = new Sandbox({
      memoryMb: this.options.memoryMb,
      cpuSliceMs: Math.min(this.options.callTimeoutMs, 5000),
      onCatastrophicError: (message) => { this.options.onLog({ at: new Date().toISOString(), level: 'error', message: `V8 catastrophic error: ${message}` }); },
    });
    sandbox.load(this.options.code, {
      call: (id, capability, method, args) => this.hostCall(sandbox, id, capability, method, args),
      done: (id, result) => this.hostDone(id, result),
      log: (id, level, message, fields) => this.hostLog(id, level, message, fields),
    }, { grants: [...this.options.grants], config: this.config });
    this.sandbox = sandbox;
  }

  updateConfig(config: Record<string, unknown>): void {
    this.config = config;
    this.sandbox.updateConfig({ grants: [...this.options.grants], config });
  }

  /** Runs one invocation to its end; never rejects. */
  run(info: InvocationInfo, input: unknown, transactional: boolean): Promise<RunOutcome> {
    return new Promise<RunOutcome>((resolve) => {
      const timer = setTimeout(() => {
        this.finish(running, { ok: false, e: { status: 504, code: 'plugin_timeout', message: `${this.options.pluginKey} did not answer within ${this.options.callTimeoutMs} ms` } });
        this.restart('wall-clock deadline exceeded');
      }, this.options.callTimeoutMs);
      const running: Running = { info, transactional, finished: false, activity: [], timer, resolve };
      this.running.set(info.id, running);
      const json = JSON.stringify({ id: info.id, kind: info.kind, target: info.target, input: JSON.parse(JSON.stringify(input ?? null)), info });
      this.enter(running, () => this.sandbox.dispatch(json));
    });
  }

  /**
   * One entry into the isolate, as the real host makes it: an answer given during the entry
   * counts only once the entry has returned (with the isolate's microtask queue empty); an entry
   * that fails withdraws it (a promise chain left spinning after the answer ran the CPU slice out).
   */
  private enter(running: Running, run: () => void): void {
    this.answered = [];
    let failure: { error: unknown } | null = null;
    try { run(); } catch (error) { failure = { error }; }
    const answered = this.answered;
    this.answered = null;
    if (failure === null) {
      for (const { running: done, result } of answered) this.deliver(done, result);
      return;
    }
    const key = this.options.pluginKey;
    const timedOut = /timed out/i.test(String((failure.error as Error)?.message ?? failure.error));
    const withdrawn = timedOut
      ? { status: 504, code: 'plugin_timeout', message: `${key} answered, but code it left running (a promise chain) exceeded its CPU time limit; the answer was withdrawn` }
      : { status: 503, code: 'plugin_crashed', message: `${key} answered, but code it left running failed; the answer was withdrawn` };
    for (const { running: done } of answered) this.deliver(done, { ok: false, e: withdrawn });
    this.failFromIsolate(running, failure.error);
    if (answered.length > 0 && timedOut && !this.sandbox.disposed) this.restart('code of a call kept running after its call answered, until its CPU slice ran out');
  }

  /**
   * Runs a batch handler over several calls, as the host's group commit does: each call is
   * registered with its own identity (so its ctx works while the handler runs), the handler
   * runs as one invocation of kind `route_batch`, and each call's activity is kept apart.
   */
  async runBatch(lead: InvocationInfo, calls: Array<{ info: InvocationInfo; input: unknown }>, transactional: boolean): Promise<BatchOutcome> {
    const members: Running[] = calls.map(({ info }) => ({ info, transactional, finished: false, activity: [], resolve: () => undefined }));
    for (const member of members) this.running.set(member.info.id, member);
    try {
      const outcome = await this.run(lead, { calls }, transactional);
      const activity = members.map((member) => member.activity);
      if (!outcome.ok) return { ok: false, error: outcome.error, activity };
      return { ok: true, answers: outcome.value as BatchOutcome['answers'], activity };
    } finally {
      for (const member of members) { member.finished = true; this.running.delete(member.info.id); }
    }
  }

  private hostCall(sandbox: Sandbox, invocationId: string, capability: string, method: string, argsJson: string): string {
    const running = this.running.get(invocationId);
    if (!running || running.finished) {
      return JSON.stringify({ e: { status: 409, code: 'invocation_closed', message: 'This ctx belongs to an invocation that has finished' } });
    }
    const args = parseCallArguments(argsJson);
    // The host's own check (sdk/capabilities), so a plugin's unit test fails exactly where the real host refuses.
    const checked = checkCapabilityCall({ plugin: this.options.pluginKey, grants: this.options.grants, member: capability, method, args, companyId: running.info.companyId });
    if ('refusal' in checked) {
      if (checked.refusal.code === 'capability_denied') this.hostLog(invocationId, 'warn', `denied ${capability}.${method}: not granted`, JSON.stringify({ capability, method }));
      return JSON.stringify({ e: checked.refusal });
    }
    const op = this.nextOp++;
    Promise.resolve()
      .then(() => serveCall(this.options.services, capability, method, args!, running.info, running.transactional, (entry) => running.activity.push(entry)))
      .then((value) => this.settle(sandbox, running, op, true, value), (error) => this.settle(sandbox, running, op, false, wire(error)));
    return JSON.stringify({ op });
  }

  private settle(sandbox: Sandbox, running: Running, op: number, ok: boolean, value: unknown): void {
    // Work that outlived its invocation, or an isolate that has since been replaced, gets nothing.
    if (running.finished || sandbox !== this.sandbox || sandbox.disposed) return;
    let json: string;
    try { json = value === undefined ? '' : JSON.stringify(value); } catch { json = JSON.stringify({ status: 500, code: 'host_error', message: 'unserializable host result' }); ok = false; }
    this.enter(running, () => sandbox.settle(op, ok, json));
  }

  private hostDone(invocationId: string, resultJson: string): void {
    const running = this.running.get(invocationId);
    if (!running || running.finished) return;
    let parsed: { ok: boolean; v?: unknown; e?: WireFailure };
    try { parsed = JSON.parse(resultJson) as typeof parsed; } catch { parsed = { ok: false, e: { status: 500, code: 'plugin_error', message: 'Plugin produced no valid result' } }; }
    if (this.answered === null) {
      this.finish(running, parsed);
      return;
    }
    // Held until the entry ends (enter); the call is closed to further ctx calls at once.
    running.finished = true;
    clearTimeout(running.timer);
    this.running.delete(running.info.id);
    this.answered.push({ running, result: parsed });
  }

  private hostLog(invocationId: string, level: string, message: string, fieldsJson: string): void {
    let fields: Record<string, unknown> | undefined;
    try { fields = JSON.parse(fieldsJson) as Record<string, unknown>; } catch { fields = undefined; }
    const safeLevel = ['debug', 'info', 'warn', 'error'].includes(level) ? level : 'info';
    this.options.onLog({ at: new Date().toISOString(), level: safeLevel, message, fields, invocationId });
  }

  private finish(running: Running, result: { ok: boolean; v?: unknown; e?: WireFailure }): void {
    if (running.finished) return;
    running.finished = true;
    clearTimeout(running.timer);
    this.running.delete(running.info.id);
    this.deliver(running, result);
  }

  private deliver(running: Running, result: { ok: boolean; v?: unknown; e?: WireFailure }): void {
    if (result.ok) {
      running.resolve({ ok: true, value: result.v ?? null, activity: running.activity });
      return;
    }
    const e = result.e ?? { status: 500, code: 'plugin_error', message: 'Plugin failed' };
    // A failed transactional call leaves nothing behind, its activity included.
    running.resolve({ ok: false, error: new PluginCallError(e.status, e.code, e.message, { details: e.details, issues: e.issues }), activity: running.transactional ? [] : running.activity });
  }

  private failFromIsolate(running: Running, error: unknown): void {
    const message = String((error as Error)?.message ?? error);
    const key = this.options.pluginKey;
    const disposed = this.sandbox.disposed || /memory limit/i.test(message);
    if (disposed) this.finish(running, { ok: false, e: { status: 503, code: 'plugin_out_of_memory', message: `${key} ran out of memory; it is being restarted` } });
    else if (/timed out/i.test(message)) this.finish(running, { ok: false, e: { status: 504, code: 'plugin_timeout', message: `${key} exceeded its CPU time limit` } });
    else this.finish(running, { ok: false, e: { status: 500, code: 'plugin_error', message: `${key} failed: ${message.split('\n')[0]!.slice(0, 500)}` } });
    if (disposed) this.restart(`isolate disposed: ${message}`);
  }

  /** A fresh isolate, as the supervisor would start a fresh worker; calls still running fail. */
  private restart(reason: string): void {
    this.restarts++;
    this.options.onLog({ at: new Date().toISOString(), level: 'warn', message: `isolate restarted: ${reason}` });
    this.sandbox.dispose();
    for (const running of [...this.running.values()]) {
      this.finish(running, { ok: false, e: { status: 503, code: 'plugin_crashed', message: `${this.options.pluginKey} stopped while handling the call: ${reason}` } });
    }
    this.load();
  }

  dispose(): void {
    for (const running of [...this.running.values()]) this.finish(running, { ok: false, e: { status: 503, code: 'plugin_unavailable', message: 'The test host was disposed' } });
    this.sandbox.dispose();
  }
}

function wire(error: unknown): { status: number; code: string; message: string } {
  if (error instanceof CapabilityFault) return { status: error.status, code: error.code, message: error.message };
  const candidate = error as { status?: unknown; code?: unknown; message?: unknown };
  if (candidate && typeof candidate.status === 'number' && typeof candidate.code === 'string') {
    return { status: candidate.status, code: candidate.code, message: String(candidate.message ?? 'failed') };
  }
  // Unlike the real host, a test fake's own failure is shown in full: it is the test author's code.
  return { status: 500, code: 'fake_failed', message: `A test fake threw: ${String((error as Error)?.message ?? error)}` };
}
