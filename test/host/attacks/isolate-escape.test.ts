import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, HOST_LEAK, installAndEnable } from './support.ts';

/** SANDBOX.md class 1: isolate escape and host-object leaks. */
let t: TestKernel;
let company: any;
const P = '/api/plugins/attack-escape';

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, 'attack-escape');
});
afterAll(async () => { await t?.stop(); });

const result = (kind: string) => t.api.post(`${P}/results`, { kind });
const args = (kind: string) => t.api.post(`${P}/companies/${company.id}/args`, { kind, companyId: company.id });

describe('reaching host objects from the isolate', () => {
  it('finds no process, require or host realm through constructor chains of the bridge', async () => {
    const res = await t.api.post(`${P}/constructors`, {});
    expect(res.status, res.text).toBe(200);
    const out = res.body as Record<string, string>;
    expect(out.callCtorProcess).toBe('string:undefined');
    expect(out.callCtorRequire).toBe('string:undefined');
    expect(out.protoCtorProcess).toBe('string:undefined');
    expect(out.evalProcess).toBe('string:undefinedundefinedundefinedundefined');
    expect(out.rawCallback).toBe('string:undefined');
    expect(out.bridgeKeys).toBe('string:call,done,log');
    expect(out.bridgeFrozen).toBe('boolean:true');
    // The bridge functions are isolate arrow functions: no host properties, no host source.
    expect(out.callOwnProps).toBe('string:length,name');
    expect(out.callSource).not.toMatch(HOST_LEAK);
    // The bridge cannot be replaced.
    expect(out.redefine).toMatch(/^threw:/);
    expect(out.assign).not.toBe('boolean:true');
    expect(out.stillBridge).toBe('string:string');
    // A caller walk from inside the bridge's argument coercion finds nothing (strict code).
    expect(out.callerLeak).not.toMatch(/hostCall|__keel_raw|ivm|Callback/);
    const globals = out.globals!.replace(/^string:/, '').split(',');
    for (const name of ['process', 'require', 'module', 'Buffer', 'global', '__keel_raw_call', '__keel_raw_done', '__keel_raw_log', 'setTimeout']) {
      expect(globals).not.toContain(name);
    }
    expect(JSON.stringify(out)).not.toMatch(HOST_LEAK);
  });

  it('answers hostile bridge calls with codes and messages only, never host stacks, paths or host objects', async () => {
    const res = await t.api.post(`${P}/companies/${company.id}/host-errors`, {});
    expect(res.status, res.text).toBe(200);
    const out = res.body as Record<string, any>;
    const text = JSON.stringify(out);
    expect(text).not.toMatch(HOST_LEAK);
    // Prototype names are not capabilities: every one is refused as unknown, before any work starts.
    for (const name of ['protoCap', 'ctorCap', 'toStringCap', 'hasOwnCap']) {
      expect(out[name], name).toEqual({ sync: { e: expect.objectContaining({ status: 400, code: 'unknown_capability' }) } });
    }
    // Prototype names are not methods either, on worker-served and kernel-served capabilities alike.
    for (const name of ['dbCtor', 'dbProto', 'dbToString', 'dbValueOf', 'dbDefineGetter', 'activityCtor', 'companiesCtor', 'companiesProto', 'companiesToString', 'companiesHasOwn']) {
      const reply = out[name];
      const error = reply.sync?.e ?? reply.asyncError;
      expect(error, `${name}: ${JSON.stringify(reply)}`).toBeTruthy();
      expect(error.code ?? error.status, name).not.toBeUndefined();
      expect(reply.async, name).toBeUndefined();
    }
    // The signed invocation identity never reaches plugin code.
    expect(text).not.toMatch(/signature|"signed"|bridge/i);
    expect(out.badJson).toEqual({ sync: { e: expect.objectContaining({ code: 'invalid_arguments' }) } });
    expect(out.notArray).toEqual({ sync: { e: expect.objectContaining({ code: 'invalid_arguments' }) } });
    expect(out.otherInvocation).toEqual({ sync: { e: expect.objectContaining({ code: 'invocation_closed' }) } });
    expect(out.badSql).toMatchObject({ code: 'sql_42P01', status: 400 });
    expect(out.badUuid).toMatchObject({ code: 'invalid_arguments', status: 400 });
    // Another company's id (this one names none) is refused without looking it up.
    expect(out.missingCompany).toMatchObject({ code: 'cross_company_denied', status: 403 });
    expect(out.hostLogWeird.message).toMatch(/must be a string/);
    expect(out.doneOther).toBe('ok');
    // Errors created by the host inside the isolate carry isolate frames only.
    for (const sites of out.capturedSites as string[]) expect(sites).not.toMatch(HOST_LEAK);
    await expectKernelAlive(t);
  });
});

describe('hostile values handed to the host', () => {
  it('refuses cycles, BigInts, throwing getters and Proxy traps with a clear error (they run in the isolate, never on the host)', async () => {
    for (const kind of ['cycle', 'bigint', 'getter']) {
      const res = await result(kind);
      expect(res.status, `${kind}: ${res.text}`).toBe(500);
      expect(res.body.code, kind).toBe('unserializable_result');
      expect(res.body.error, kind).toMatch(/^Plugin result is not plain JSON: /);
      expect(res.text).not.toMatch(HOST_LEAK);
    }
    // A Proxy's traps fire in the isolate (already when the SDK looks for a then method).
    const proxy = await result('proxy');
    expect(proxy.status).toBe(500);
    expect(proxy.body).toEqual({ code: 'plugin_error', error: 'Plugin failed: proxy trap ran' });
    await expectKernelAlive(t);
  });

  it('refuses results that are not plain JSON instead of converting them: functions, symbols, toJSON, boxed strings, holes', async () => {
    const cases: Record<string, RegExp> = {
      function: /a function at result$/, symbol: /a symbol at result$/, 'function-inside': /a function at result\.callback/,
      date: /a Date at result\.at/, map: /a Map at result/, nan: /not a finite number at result\.n/, 'string-object': /a String object at result\.name/,
      'undefined-in-array': /undefined at result\[1\]/, sparse: /a hole at result\[0\]/, 'to-json': /toJSON at result/, 'proxy-to-json': /toJSON at result/,
      'polluted-to-json': /toJSON at result/,
    };
    for (const [kind, message] of Object.entries(cases)) {
      const res = await result(kind);
      if (kind === 'polluted-to-json') expect((await result('unpollute')).body).toBe('clean');
      expect(res.status, `${kind}: ${res.text}`).toBe(500);
      expect(res.body.code, kind).toBe('unserializable_result');
      expect(res.body.error, kind).toMatch(/^Plugin result is not plain JSON: /);
      expect(res.body.error, kind).toMatch(message);
    }
    await expectKernelAlive(t);
  });

  it('survives nesting too deep to serialise, whether built in the isolate or written raw to the bridge', async () => {
    const deep = await result('deep');
    expect(deep.status, deep.text).toBe(500);
    expect(deep.body.code).toBe('unserializable_result');
    for (const kind of ['deep-raw', 'deep-raw-error']) {
      const res = await result(kind);
      expect(res.status, `${kind}: ${res.text}`).toBe(502);
      expect(res.body).toMatchObject({ code: 'plugin_result_too_deep' });
    }
    // The worker did not die over it.
    const health = await t.api.get(`${P}/health`);
    expect(health.body.worker.restarts).toBe(0);
    expect((await t.api.get(`${P}/ok`)).status).toBe(200);
    await expectKernelAlive(t);
  });

  it('does not let JSON __proto__ keys pollute the host', async () => {
    const res = await result('proto');
    expect(res.status, res.text).toBe(200);
    expect(res.body.ok).toBe(1);
    const envelope = await result('envelope-proto');
    expect(envelope.status).toBe(201);
    expect(envelope.headers.get('x-fine')).toBe('yes');
    expect(envelope.headers.get('x-injected')).toBeNull();
    const pollute = await t.api.post(`${P}/pollute`, {});
    expect(pollute.body).toEqual({ inIsolate: 'yes', parsedOwn: ['__proto__'] });
    // The kernel runs in this test process: its prototypes are untouched.
    expect(({} as any).polluted).toBeUndefined();
    expect(({} as any).polluted2).toBeUndefined();
    expect(({} as any).isAdmin).toBeUndefined();
    expect(({} as any).viaJson).toBeUndefined();
    expect(([] as any).injected).toBeUndefined();
    await expectKernelAlive(t);
  });

  it('bounds what a plugin error can carry and which response headers it can set', async () => {
    const huge = await result('huge-error');
    expect(huge.status).toBe(418);
    expect(huge.text.length).toBeLessThan(10_000);
    expect(huge.body.code).toBe('plugin_error');
    const odd = await result('odd-error');
    expect(odd.status).toBe(500);
    expect(typeof odd.body.code).toBe('string');
    expect(typeof odd.body.error).toBe('string');
    const garbage = await result('garbage-done');
    expect(garbage.status).toBe(500);
    expect(garbage.body).toMatchObject({ code: 'plugin_error', error: 'Plugin produced no valid result' });
    // Answers in the SDK's shape go on as the text the isolate wrote: text that is not exactly one value is refused.
    for (const kind of ['second-value-done', 'trailing-done']) {
      const smuggled = await result(kind);
      expect(smuggled.status, kind).toBe(500);
      expect(smuggled.body, kind).toMatchObject({ code: 'plugin_error', error: 'Plugin produced no valid result' });
      expect(smuggled.text, kind).not.toContain('<');
    }
    const spaced = await result('spaced-done');
    expect(spaced.status).toBe(200);
    expect(spaced.text).toBe('{"a":1}');
    const noProto = await result('non-error-throw');
    expect(noProto.status).toBe(500);
    expect(noProto.body.code).toBe('plugin_error');
    const crlf = await result('header-crlf');
    expect(crlf.headers.get('set-cookie')).toBeNull();
    expect(crlf.status).toBe(502);
    expect(crlf.body.code).toBe('plugin_invalid_response');
    const forbidden = await result('header-forbidden');
    expect(forbidden.status).toBe(200);
    expect(forbidden.headers.get('set-cookie')).toBeNull();
    expect(forbidden.headers.get('content-security-policy')).toBeNull();
    expect(forbidden.headers.get('access-control-allow-origin')).toBeNull();
    await expectKernelAlive(t);
  });
});

describe('hostile arguments to ctx calls', () => {
  it('refuses cycles and BigInts in the isolate, before anything crosses', async () => {
    for (const kind of ['cycle', 'bigint']) {
      const res = await args(kind);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ code: 'invalid_arguments', status: 400 });
      expect(res.body.message).toMatch(/circular|BigInt/i);
    }
  });

  it('refuses arguments that are not plain JSON of the expected type instead of converting them', async () => {
    const cases: Record<string, RegExp> = {
      'to-json-sql': /toJSON at args\[0\]/, 'string-object-sql': /a String object at args\[0\]/, 'proxy-sql': /toJSON at args\[0\]/,
      'string-object-param': /a String object at args\[1\]\[0\]/, 'date-param': /a Date at args\[1\]\[0\]/, 'nan-param': /not a finite number at args\[1\]\[0\]/,
      'function-param': /a function at args\[1\]\[0\]/, 'to-json-kernel': /toJSON at args\[0\]/,
    };
    for (const [kind, message] of Object.entries(cases)) {
      const res = await args(kind);
      expect(res.status, res.text).toBe(200);
      expect(res.body, kind).toMatchObject({ code: 'invalid_arguments', status: 400 });
      expect(res.body.message, kind).toMatch(message);
      expect(res.body.value, kind).toBeUndefined();
    }
    // The bridge itself takes strings only, and the log takes a string message.
    const bridge = await args('string-object-bridge');
    expect(bridge.body.thrown?.message, bridge.text).toMatch(/must be a string/);
    const log = await args('string-object-log');
    expect(log.body.message, log.text).toMatch(/must be a string/);
  });

  it('refuses argument nesting and sizes the host would choke on, with a clear error', async () => {
    for (const kind of ['deep-db', 'deep-kernel']) {
      const res = await args(kind);
      expect(res.status, res.text).toBe(200);
      expect(res.body, kind).toEqual({ sync: { e: expect.objectContaining({ status: 400, code: 'invalid_arguments', message: expect.stringMatching(/nested deeper/) }) } });
    }
    const huge = await args('huge-kernel');
    expect(huge.body).toEqual({ sync: { e: expect.objectContaining({ status: 413, code: 'invalid_arguments' }) } });
    const proto = await args('proto-kernel');
    // The registry's argument schemas refuse it at the bridge, before any host work starts.
    expect(proto.body.asyncError ?? proto.body.sync?.e).toMatchObject({ code: 'invalid_arguments' });
    const sparse = await args('sparse-db');
    expect(sparse.body).toMatchObject({ code: 'invalid_arguments', message: expect.stringMatching(/a hole at args\[1\]\[0\]/) });
    await expectKernelAlive(t);
  });
});
