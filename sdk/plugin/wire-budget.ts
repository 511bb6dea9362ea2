/**
 * How many characters of arguments one ctx call may send to the host, checked in the isolate
 * before the arguments are serialised: a text built cheaply (V8 keeps `'x'.repeat(n)` and
 * concatenations as ropes, whose length is known without flattening them) would otherwise be
 * copied into one flat string, and a 100 MiB text takes the isolate past its heap limit before
 * the host could refuse it. The host checks the serialised text against the same bounds.
 */
export const MAX_ARGS_CHARS = 8 * 1024 * 1024;
/** Calls the kernel serves cross a second boundary (the worker to the kernel): a tighter bound. */
export const MAX_KERNEL_ARGS_CHARS = 1_000_000;

// Captured when the SDK loads, before plugin code could replace them.
const { getOwnPropertyDescriptor, getPrototypeOf, keys } = Object;
const isArray = Array.isArray;
const ObjectPrototype = Object.prototype;
const ArrayPrototype = Array.prototype;
const numberText = String;
const ObjectSet = Set;

/**
 * Whether the strings (values and keys) in `value` add up to more than `max` characters: a lower
 * bound of its JSON length, read without copying anything. Only own data properties are read
 * (an accessor is left to the plain-JSON check, which refuses it or reads it once), each object
 * once, at most `maxDepth` deep: what is not counted here is refused or bounded there.
 */
export function stringsExceed(value: unknown, max: number, maxDepth = 200): boolean {
  let total = 0;
  const seen = new ObjectSet<object>();
  const walk = (item: unknown, depth: number): boolean => {
    if (typeof item === 'string') return (total += item.length) > max;
    if (item === null || typeof item !== 'object' || depth > maxDepth || seen.has(item)) return false;
    seen.add(item);
    const proto = getPrototypeOf(item);
    if (proto !== ObjectPrototype && proto !== ArrayPrototype && proto !== null) return false;
    const names = isArray(item) ? null : keys(item);
    const length = names ? names.length : (item as unknown[]).length;
    for (let i = 0; i < length; i++) {
      const key = names ? names[i]! : numberText(i);
      if (names && (total += key.length) > max) return true;
      const descriptor = getOwnPropertyDescriptor(item, key);
      // A hole ends the walk: the plain-JSON check refuses sparse arrays, whatever their length.
      if (!descriptor) return false;
      if ('value' in descriptor && walk(descriptor.value, depth + 1)) return true;
    }
    return false;
  };
  return walk(value, 0);
}
