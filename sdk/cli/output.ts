import type { InvalidManifestError } from '../build/validate-manifest.ts';
import { KeelApiError, KeelConnectionError } from '../client/index.ts';
import { unauthorizedHint } from './auth-hint.ts';
import { CliError } from './errors.ts';
import { resolvedSession, type GlobalOptions } from './session.ts';

export { CliError } from './errors.ts';
export { clientFor, companyIdFor, optionalCompanyId, session, type GlobalOptions } from './session.ts';
export { shownPath, userPath } from './user-paths.ts';

/** Prints the human lines, or with --json the data as one line of JSON. */
export function emit(options: Pick<GlobalOptions, 'json'>, human: string | string[], data: unknown): void {
  if (options.json) process.stdout.write(`${JSON.stringify(data)}\n`);
  else process.stdout.write(`${Array.isArray(human) ? human.join('\n') : human}\n`);
}

/** Aligned columns, the first row a header. */
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

/** A value as a table cell: nothing for null, JSON for objects, one line, at most 60 characters. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value).replace(/\s+/g, ' ');
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** A column of a list: a field of each row, or a function of the row. */
export type Column = string | [header: string, value: (row: any) => unknown];

/**
 * A list: with --json the answer as the server sent it (its documented shape), otherwise a
 * table of the given columns (a field name is its own header, upper-cased).
 */
export function emitList(options: Pick<GlobalOptions, 'json'>, rows: unknown[], columns: Column[], empty: string, data: unknown = rows): void {
  if (options.json || !rows.length) return emit(options, empty, data);
  const header = columns.map((c) => (typeof c === 'string' ? c.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() : c[0]));
  const body = rows.map((row) => columns.map((c) => cell(typeof c === 'string' ? (row as Record<string, unknown>)[c] : c[1](row))));
  emit(options, table([header, ...body]), data);
}

/** One record: with --json as sent, otherwise `field: value` lines (nested values as JSON). */
export function emitRecord(options: Pick<GlobalOptions, 'json'>, record: unknown, title?: string): void {
  if (options.json || !record || typeof record !== 'object' || Array.isArray(record)) return emit(options, title ?? JSON.stringify(record, null, 2), record);
  const entries = Object.entries(record as Record<string, unknown>);
  const width = Math.max(...entries.map(([key]) => key.length));
  const lines = entries.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  emit(options, title ? [title, ...lines] : lines, record);
}

/**
 * Long work: a line on stderr when it starts and when it ends (with the time it took), so that
 * stdout keeps only the result. Silent with --json, where stderr is for the error document.
 */
export async function withProgress<T>(options: Pick<GlobalOptions, 'json'>, label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const interactive = !options.json && process.stderr.isTTY;
  if (!options.json) process.stderr.write(`${label}...${interactive ? '' : '\n'}`);
  const ticker = interactive ? setInterval(() => process.stderr.write('.'), 1000) : undefined;
  try {
    const result = await work();
    if (!options.json) process.stderr.write(`${interactive ? ' ' : ''}done in ${formatMs(performance.now() - started)}\n`);
    return result;
  } catch (error) {
    if (interactive) process.stderr.write(' failed\n');
    throw error;
  } finally {
    if (ticker) clearInterval(ticker);
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MB`;
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** A type, not an interface: `plugin dev` passes it on as a plain record of its event. */
export type DescribedError = {
  error: string;
  code: string;
  status?: number;
  issues?: Array<{ path: string; message: string }>;
  /** What to do about it, one line each. */
  hint?: string[];
};

/** A failure as one structured record: what --json prints and what the human text is built from. */
export function describeError(error: unknown, options?: GlobalOptions): DescribedError {
  if (error instanceof KeelApiError) {
    const described: DescribedError = { error: error.message, code: error.code, status: error.status, issues: error.issues ?? (error.details as { issues?: [] } | undefined)?.issues };
    if (error.status === 401 && options) described.hint = unauthorizedHint(resolvedSession(options)?.keySource ?? null);
    return described;
  }
  if (error instanceof KeelConnectionError) {
    // Names where the address came from: a CLI that guessed the wrong server must say why it chose that one.
    const source = options ? resolvedSession(options)?.source : undefined;
    if (!source) return { error: error.message, code: 'connection_failed' };
    const hint = source === 'address from --api-base' ? undefined : ['Start it with npm start, or name the server as you started it: --data-dir, --port, --host or --api-base.'];
    return { error: `No Keel server at ${error.baseUrl} (${error.reason}; ${source}); is it running?`, code: 'connection_failed', ...(hint ? { hint } : {}) };
  }
  // By name: the manifest validator (and its schema) loads only with the commands that use it.
  if ((error as Error)?.name === 'InvalidManifestError') return { error: (error as InvalidManifestError).message, code: 'invalid_manifest', issues: (error as InvalidManifestError).issues };
  if (error instanceof CliError) return { error: error.message, code: error.code, ...(error.issues ? { issues: error.issues } : {}) };
  return { error: String((error as Error)?.message ?? error), code: 'failed' };
}

/** Writes a failure to stderr (as JSON with --json) and marks the process as failed. */
export function report(options: GlobalOptions, error: unknown): void {
  const described = describeError(error, options);
  if (options.json) {
    process.stderr.write(`${JSON.stringify(described)}\n`);
  } else {
    const suffix = described.status ? ` (${described.code}, HTTP ${described.status})` : described.code === 'failed' || described.code === 'connection_failed' ? '' : ` (${described.code})`;
    const lines = [`Error: ${described.error}${suffix}`];
    for (const issue of described.issues ?? []) lines.push(`  - ${issue.path}: ${issue.message}`);
    lines.push(...(described.hint ?? []));
    process.stderr.write(`${lines.join('\n')}\n`);
  }
  process.exitCode = 1;
}
