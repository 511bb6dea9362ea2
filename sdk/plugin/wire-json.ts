/**
 * What a plugin hands to the host (ctx call arguments, results, error details, log fields)
 * must be plain JSON: null, booleans, finite numbers, primitive strings, arrays without holes
 * and objects whose prototype is Object.prototype or null. JSON.stringify would convert the rest
 * without a word: a Date or any object with toJSON becomes whatever toJSON says, a String object
 * becomes a string, NaN becomes null, a function or symbol disappears (a handler returning one
 * answered 200 null), a Map becomes {}. The host sees only the text and could not tell, so the
 * conversion is refused here, naming the value and where it is.
 *
 * The check walks the value once, then the captured native JSON.stringify writes it (a walk that
 * wrote the text itself was two to three times slower on large results). A getter or Proxy that
 * answers differently the second time can still slip a conversion past the check: that is the
 * plugin fooling itself, since the host treats every text it receives as hostile anyway.
 * Properties whose value is undefined are left out, as JSON leaves them out: an optional field
 * not set is idiomatic, not a conversion.
 */
export const MAX_WIRE_DEPTH = 200;

export class NotPlainJson extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotPlainJson';
  }
}

// Captured when the SDK loads, before plugin code could replace them.
const quote = JSON.stringify;
const { getPrototypeOf, keys } = Object;
const isArray = Array.isArray;
const ObjectPrototype = Object.prototype;
const ArrayPrototype = Array.prototype;
const isFiniteNumber = Number.isFinite;

function kindOf(value: object): string {
  const proto = getPrototypeOf(value) as { constructor?: { name?: unknown } } | null;
  const name = proto?.constructor?.name;
  return typeof name === 'string' && name.length > 0 ? name : 'object';
}

function article(name: string): string {
  return /^[AEIOU]/i.test(name) ? `an ${name}` : `a ${name}`;
}

/** What a non-plain object is, and what to pass instead. */
function nonPlain(value: object, where: string): NotPlainJson {
  const name = kindOf(value);
  if (name === 'String' || name === 'Number' || name === 'Boolean') return new NotPlainJson(`a ${name} object at ${where}; pass the primitive value`);
  if (name === 'Date') return new NotPlainJson(`a Date at ${where}; pass date.toISOString()`);
  return new NotPlainJson(`${article(name)} at ${where}; only plain objects and arrays cross to the host`);
}

/** Throws NotPlainJson naming what is wrong and where; `root` names the value (`result`, `args`). */
export function assertPlainJson(value: unknown, root: string): void {
  const path: Array<string | number> = [];
  const where = () => root + path.map((step) => (typeof step === 'number' ? `[${step}]` : /^[A-Za-z_$][\w$]*$/.test(step) ? `.${step}` : `[${quote(step)}]`)).join('');
  const seen: object[] = [];
  const check = (item: unknown): void => {
    switch (typeof item) {
      case 'string': case 'boolean': return;
      case 'number':
        if (!isFiniteNumber(item)) throw new NotPlainJson(`${String(item)} is not a finite number at ${where()}`);
        return;
      case 'undefined': throw new NotPlainJson(`undefined at ${where()}; use null`);
      case 'function': throw new NotPlainJson(`a function at ${where()}`);
      case 'symbol': throw new NotPlainJson(`a symbol at ${where()}`);
      case 'bigint': throw new NotPlainJson(`a BigInt at ${where()}; JSON has no BigInt, pass it as a string`);
    }
    if (item === null) return;
    const object = item as Record<string, unknown>;
    if (seen.length >= MAX_WIRE_DEPTH) throw new NotPlainJson(`nested deeper than ${MAX_WIRE_DEPTH} levels at ${where()}`);
    if (seen.includes(object)) throw new NotPlainJson(`a circular reference at ${where()}`);
    const proto = getPrototypeOf(object);
    const array = isArray(object);
    if (array ? proto !== ArrayPrototype : proto !== ObjectPrototype && proto !== null) throw nonPlain(object, where());
    if (typeof object.toJSON === 'function') throw new NotPlainJson(`an object with toJSON at ${where()}; pass the value toJSON would give`);
    seen.push(object);
    if (array) {
      for (let i = 0; i < object.length; i++) {
        path.push(i);
        if (!(i in object)) throw new NotPlainJson(`a hole at ${where()} (a sparse array); fill it with null`);
        check(object[i]);
        path.pop();
      }
    } else {
      for (const key of keys(object)) {
        const entry = object[key];
        if (entry === undefined) continue;
        path.push(key);
        check(entry);
        path.pop();
      }
    }
    seen.pop();
  };
  check(value);
}

/** The JSON text of a plain-JSON value (see assertPlainJson); `undefined` at the top is null. */
export function wireJson(value: unknown, root: string): string {
  if (value === undefined) return 'null';
  assertPlainJson(value, root);
  return quote(value);
}

const { getOwnPropertyDescriptor, defineProperty } = Object;
const ownKeys = Reflect.ownKeys;

/**
 * A copy of `value` made of its own data properties only, for options the host acts on
 * (`ctx.http.fetch`'s): an accessor (getter or setter) is refused without being called, and so
 * are symbol keys and everything assertPlainJson refuses (functions, class instances, Dates).
 * Each property is read once, from its descriptor, and the copy is what is sent: a getter never
 * runs, and a Proxy cannot answer the check one thing and the send another. (A Proxy cannot be
 * told from a plain object here; its traps run in the plugin's own isolate, never on the host.)
 */
export function plainDataCopy(value: unknown, root: string): unknown {
  const path: Array<string | number> = [];
  const where = () => root + path.map((step) => (typeof step === 'number' ? `[${step}]` : /^[A-Za-z_$][\w$]*$/.test(step) ? `.${step}` : `[${quote(step)}]`)).join('');
  const seen: object[] = [];
  const copy = (item: unknown): unknown => {
    if (typeof item === 'function') throw new NotPlainJson(`a function at ${where()}`);
    if (item === null || typeof item !== 'object') return item;
    if (seen.length >= MAX_WIRE_DEPTH) throw new NotPlainJson(`nested deeper than ${MAX_WIRE_DEPTH} levels at ${where()}`);
    if (seen.includes(item)) throw new NotPlainJson(`a circular reference at ${where()}`);
    const array = isArray(item);
    const proto = getPrototypeOf(item);
    if (array ? proto !== ArrayPrototype : proto !== ObjectPrototype && proto !== null) throw nonPlain(item, where());
    seen.push(item);
    const out: Record<string | number, unknown> | unknown[] = array ? [] : {};
    for (const key of ownKeys(item)) {
      if (typeof key === 'symbol') throw new NotPlainJson(`a symbol-keyed property at ${where()}; only plain data crosses to the host`);
      const descriptor = getOwnPropertyDescriptor(item, key);
      if (!descriptor) continue;
      if (!('value' in descriptor)) throw new NotPlainJson(`an accessor (get ${key} or set ${key}) at ${where()}; pass plain data, not getters or setters`);
      if (!descriptor.enumerable) continue;
      if (descriptor.value === undefined && !array) continue;
      path.push(array ? Number(key) : key);
      // Defined as own data properties: a key named __proto__ stays a plain key of the copy.
      defineProperty(out, key, { value: copy(descriptor.value), enumerable: true, writable: true, configurable: true });
      path.pop();
    }
    seen.pop();
    return out;
  };
  const result = copy(value);
  // The copy holds plain data only; the usual check names what else JSON would convert (holes, NaN).
  assertPlainJson(result, root);
  return result;
}
