/** One problem of a request body: where (a path of keys and indexes) and what. */
export interface Issue {
  code: string;
  path: Array<string | number>;
  message: string;
}

/** Collects the issues of one body; readers append and carry on, so that every problem is reported at once. */
export class Issues {
  readonly list: Issue[] = [];
  add(code: string, path: Array<string | number>, message: string): void {
    this.list.push({ code, path, message });
  }
  get count(): number {
    return this.list.length;
  }
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Unknown fields are refused at every level of a policy document and of an evaluation. */
export function rejectUnknownKeys(value: Json, allowed: readonly string[], path: Array<string | number>, issues: Issues): void {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length) issues.add('unrecognized_keys', path, `Unrecognized key(s) in object: ${unknown.map((key) => `'${key}'`).join(', ')}`);
}

/** The number of characters as a reader counts them (code points, not UTF-16 units). */
export function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
