import ivm from 'isolated-vm';

/**
 * The plugin's isolate: a V8 heap with a memory limit, no Node APIs, no WebAssembly and
 * no shared memory, and exactly three host functions (`__keel_host.call/done/log`). The
 * host enters it synchronously (`applySync`) with a CPU time slice per entry; plugin code
 * never sees an ivm object, a host function's own properties or a host stack.
 */
export interface HostFunctions {
  call(invocationId: string, capability: string, method: string, args: string): string;
  done(invocationId: string, result: string): void;
  log(invocationId: string, level: string, message: string, fields: string): void;
}

const BOOTSTRAP = `
'use strict';
{
  const hostCall = __keel_raw_call, hostDone = __keel_raw_done, hostLog = __keel_raw_log;
  // Strings only, refused otherwise: converting (String(v)) would run the plugin's toString or
  // toJSON and pass on whatever it answered, which the host could not tell from a string.
  const str = (v, name) => { if (typeof v !== 'string') throw new TypeError('__keel_host: ' + name + ' must be a string'); return v; };
  // Wrappers, so plugin code holds plain functions and never the host references themselves.
  const bridge = Object.freeze({
    call: (a, b, c, d) => hostCall(str(a, 'the invocation id'), str(b, 'the capability'), str(c, 'the method'), str(d, 'the arguments (JSON text)')),
    done: (a, b) => { hostDone(str(a, 'the invocation id'), str(b, 'the result (JSON text)')); },
    log: (a, b, c, d) => { hostLog(str(a, 'the invocation id'), str(b, 'the level'), str(c, 'the message'), str(d, 'the fields (JSON text)')); },
  });
  Object.defineProperty(globalThis, '__keel_host', { value: bridge, writable: false, configurable: false, enumerable: false });
  delete globalThis.__keel_raw_call; delete globalThis.__keel_raw_done; delete globalThis.__keel_raw_log;
  // Memory the heap limit does not account for, and primitives for timing attacks.
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  const NativeArrayBuffer = ArrayBuffer;
  globalThis.ArrayBuffer = new Proxy(NativeArrayBuffer, {
    construct(target, args) {
      if (args[1] !== undefined) throw new RangeError('Resizable ArrayBuffers are not available in the sandbox');
      return Reflect.construct(target, [args[0]]);
    },
  });
  // The native constructor is also reachable as ArrayBuffer.prototype.constructor (and so from
  // any buffer): point that at the guard too, and take resize away from every buffer.
  Object.defineProperty(NativeArrayBuffer.prototype, 'constructor', { value: globalThis.ArrayBuffer, writable: false, configurable: false, enumerable: false });
  delete NativeArrayBuffer.prototype.resize;
}
`;

export class Sandbox {
  readonly isolate: ivm.Isolate;
  private readonly context: ivm.Context;
  private dispatchRef!: ivm.Reference<(json: string) => void>;
  private settleRef!: ivm.Reference<(op: number, ok: boolean, json: string) => void>;
  private readonly cpuSliceMs: number;

  constructor(options: { memoryMb: number; cpuSliceMs: number; onCatastrophicError: (message: string) => void }) {
    this.cpuSliceMs = options.cpuSliceMs;
    this.isolate = new ivm.Isolate({ memoryLimit: options.memoryMb, onCatastrophicError: options.onCatastrophicError });
    this.context = this.isolate.createContextSync();
  }

  /**
   * Installs the bridge, runs the plugin bundle and hands it its grants and configuration.
   * `codeCache` is V8's code cache of this bundle from an earlier load (it spares most of the
   * compile, a good part of a restart); V8 checks it against the source and ignores one that
   * does not fit. Answers a new cache when none was given or it was refused.
   */
  load(code: string, host: HostFunctions, setup: { grants: string[]; config: Record<string, unknown> }, codeCache?: Uint8Array): { codeCache?: Uint8Array } {
    const jail = this.context.global;
    jail.setSync('globalThis', jail.derefInto());
    jail.setSync('__keel_raw_call', new ivm.Callback(host.call));
    jail.setSync('__keel_raw_done', new ivm.Callback(host.done));
    jail.setSync('__keel_raw_log', new ivm.Callback(host.log));
    this.isolate.compileScriptSync(BOOTSTRAP).runSync(this.context, { timeout: 1000 });
    const cachedData = codeCache ? new ivm.ExternalCopy(codeCache.buffer.slice(codeCache.byteOffset, codeCache.byteOffset + codeCache.byteLength) as ArrayBuffer) : undefined;
    // Given both, V8 produces new data only when the data given does not fit.
    const script = this.isolate.compileScriptSync(code, { filename: 'plugin.js', cachedData, produceCachedData: true }) as ivm.Script & ivm.CachedDataResult;
    const produced = script.cachedData?.copy();
    script.runSync(this.context, { timeout: 5000 });
    this.dispatchRef = jail.getSync('__keel_dispatch', { reference: true }) as ivm.Reference<(json: string) => void>;
    this.settleRef = jail.getSync('__keel_settle', { reference: true }) as ivm.Reference<(op: number, ok: boolean, json: string) => void>;
    if (this.dispatchRef.typeof !== 'function' || this.settleRef.typeof !== 'function') {
      throw new Error('the bundle did not install the SDK runtime; does the entry import @keel/sdk/plugin and call definePlugin?');
    }
    const init = jail.getSync('__keel_init', { reference: true }) as ivm.Reference<(json: string) => void>;
    init.applySync(undefined, [JSON.stringify(setup)], { timeout: 1000 });
    return produced ? { codeCache: new Uint8Array(produced) } : {};
  }

  /** Enters the isolate to start an invocation; returns when the isolate yields (awaits host work or finishes). */
  dispatch(json: string): void {
    this.dispatchRef.applySync(undefined, [json], { timeout: this.cpuSliceMs });
  }

  /** Delivers the outcome of an async host operation; the plugin's await resumes inside this call. */
  settle(op: number, ok: boolean, json: string): void {
    this.settleRef.applySync(undefined, [op, ok, json], { timeout: this.cpuSliceMs });
  }

  updateConfig(setup: { grants: string[]; config: Record<string, unknown> }): void {
    const init = this.context.global.getSync('__keel_init', { reference: true }) as ivm.Reference<(json: string) => void>;
    init.applySync(undefined, [JSON.stringify(setup)], { timeout: 1000 });
  }

  get disposed(): boolean {
    return this.isolate.isDisposed;
  }

  dispose(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}
