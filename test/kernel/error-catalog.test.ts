import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Keeps docs/errors.md in step with the kernel: every error code the kernel can answer with
 * is documented with the statuses it is used with, and every documented code is still used.
 *
 * Codes are read from the TypeScript syntax tree of kernel/**\/*.ts, so calls spread over
 * several lines, comments and string escapes are handled like the compiler handles them:
 * - `new KeelError(status, code, ...)`: the code is the second argument;
 * - calls of the helpers exported by kernel/http/errors.ts: which argument carries the code,
 *   its default and the status are read from errors.ts itself, so a new helper is picked up
 *   without touching this test. A helper's default code counts when a call omits the code
 *   argument (`forbidden('...')` answers `forbidden`); defaults no call relies on are not
 *   answered and so not documented;
 * - object literals `{ status, code, message }` with a literal code: the error objects that
 *   plugin workers and the host exchange before they become a KeelError.
 * A code or status that is not a literal (or a conditional between literals, or a literal
 * fallback after `??`) is dynamic, in whole or in part; the dynamic sites are listed below
 * and must match exactly.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const KERNEL = join(ROOT, 'kernel');
const ERRORS_FILE = join(KERNEL, 'http', 'errors.ts');
const CATALOG = join(ROOT, 'docs', 'errors.md');

/**
 * Sites whose code or status cannot be known statically, with why that is acceptable.
 * - kernel/http/app.ts (normalise): an error thrown by a library (Koa, a body parser) that
 *   carries a 4xx status passes through with its own status and, if it has one, its own
 *   lowercase `code`; `bad_request` otherwise. No library in the request path is known to set
 *   such a code, so only `bad_request` is documented.
 * - kernel/host/contributions/route-answer.ts: a plugin route that fails answers with the
 *   status and code the plugin chose; those codes belong to the plugin's documentation.
 * - kernel/host/capabilities/services-consume/kernel.ts: a failed service call passes on the status and code
 *   of the providing plugin's error, `service_failed` (502) when it gave none.
 * - kernel/host/contributions/kernel-points.ts: a plugin's refusal of a kernel point passes on
 *   with the plugin's status (only 400, 403, 404, 409, 422) and its code when that looks like an
 *   API code (else 422 `plugin_point_refused`); those codes belong to the plugin's docs.
 * - kernel/host/contributions/route-dispatch.ts (withAuthCodes): the host's own 401 and
 *   other-company 403 keep their status and take the code the route declares under `authCodes`.
 * - kernel/host/broker.ts: passes on the refusal of the capability registry's one check
 *   (sdk/capabilities/check-call.ts): unknown_capability, capability_denied,
 *   company_scope_required, invalid_arguments.
 * - kernel/host/contributions/portability-parts.ts: a plugin's refusal of its part of a company
 *   import or export passes on with the plugin's 4xx status and code (502 `portability_part_failed`
 *   otherwise); those codes belong to the plugin's documentation.
 * - kernel/host/contributions/route-dispatch.ts: the host's own 401 and other-company 403 of a
 *   plugin route, with the codes the route declares under `authCodes` (the plugin's documentation
 *   lists them); status and message stay the host's.
 */
const DYNAMIC_SITES = [
  { file: 'kernel/http/app.ts', what: 'code' },
  { file: 'kernel/http/app.ts', what: 'status' },
  { file: 'kernel/host/contributions/route-answer.ts', what: 'code' },
  { file: 'kernel/host/contributions/route-answer.ts', what: 'status' },
  { file: 'kernel/host/capabilities/services-consume/kernel.ts', what: 'code' },
  { file: 'kernel/host/capabilities/services-consume/kernel.ts', what: 'status' },
  { file: 'kernel/host/contributions/kernel-points.ts', what: 'code' },
  { file: 'kernel/host/contributions/kernel-points.ts', what: 'status' },
  { file: 'kernel/host/contributions/route-dispatch.ts', what: 'code' },
  { file: 'kernel/host/contributions/route-dispatch.ts', what: 'status' },
  { file: 'kernel/host/broker.ts', what: 'code' },
  { file: 'kernel/host/broker.ts', what: 'status' },
  { file: 'kernel/host/contributions/portability-parts.ts', what: 'code' },
  { file: 'kernel/host/contributions/portability-parts.ts', what: 'status' },
  { file: 'kernel/host/contributions/route-dispatch.ts', what: 'code' },
  { file: 'kernel/host/contributions/route-dispatch.ts', what: 'status' },
];

interface Use { code: string; status: number | null; file: string; line: number }
interface Dynamic { file: string; line: number; what: 'code' | 'status' }
interface Helper { status: number | null; codeIndex: number | null; fixedCode: string | null; defaultCode: string | null }

function kernelFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return kernelFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

const unwrap = (node: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node) ? unwrap(node.expression) : node;

/**
 * The literals an expression can evaluate to: a literal itself, both branches of a
 * conditional, the fallback of `x ?? literal` / `x || literal`. `dynamic` is set when some
 * value cannot be known statically (the `x` of a fallback, a variable, a call).
 */
function literals<T extends string | number>(node: ts.Expression | undefined, pick: (expr: ts.Expression) => T | undefined): { values: T[]; dynamic: boolean } {
  const expr = node && unwrap(node);
  if (!expr) return { values: [], dynamic: true };
  const literal = pick(expr);
  if (literal !== undefined) return { values: [literal], dynamic: false };
  const merge = (a: ts.Expression, b: ts.Expression) => {
    const left = literals(a, pick);
    const right = literals(b, pick);
    return { values: [...left.values, ...right.values], dynamic: left.dynamic || right.dynamic };
  };
  if (ts.isConditionalExpression(expr)) return merge(expr.whenTrue, expr.whenFalse);
  if (ts.isBinaryExpression(expr) && (expr.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken || expr.operatorToken.kind === ts.SyntaxKind.BarBarToken)) {
    return merge(expr.left, expr.right);
  }
  return { values: [], dynamic: true };
}

const literalStrings = (node: ts.Expression | undefined) => literals(node, (expr) =>
  ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr) ? expr.text : undefined);
const literalNumbers = (node: ts.Expression | undefined) => literals(node, (expr) => (ts.isNumericLiteral(expr) ? Number(expr.text) : undefined));

function literalNumber(node: ts.Expression | undefined): number | null {
  const found = literalNumbers(node);
  return found.dynamic || found.values.length !== 1 ? null : found.values[0]!;
}

/** Reads the helpers of errors.ts: `export const name = (params) => new KeelError(status, code, ...)`. */
function readHelpers(): Map<string, Helper> {
  const helpers = new Map<string, Helper>();
  for (const statement of parse(ERRORS_FILE).statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const decl of statement.declarationList.declarations) {
      const init = decl.initializer && unwrap(decl.initializer);
      if (!ts.isIdentifier(decl.name) || !init || !ts.isArrowFunction(init) || !ts.isNewExpression(init.body)) continue;
      const construction = init.body;
      if (!ts.isIdentifier(construction.expression) || construction.expression.text !== 'KeelError') continue;
      const [statusArg, codeArg] = construction.arguments ?? [];
      const helper: Helper = { status: literalNumber(statusArg), codeIndex: null, fixedCode: null, defaultCode: null };
      const code = codeArg && unwrap(codeArg);
      if (code && ts.isIdentifier(code)) {
        const index = init.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === code.text);
        const fallback = init.parameters[index]?.initializer;
        helper.codeIndex = index;
        helper.defaultCode = fallback && ts.isStringLiteral(fallback) ? fallback.text : null;
      } else if (code) {
        const literal = literalStrings(code);
        helper.fixedCode = literal.dynamic ? null : literal.values[0] ?? null;
      }
      helpers.set(decl.name.text, helper);
    }
  }
  return helpers;
}

/**
 * Errors also travel as plain `{status, code, message}` objects between plugin workers and
 * the host, and reach clients when the host turns them into a KeelError; an object literal
 * with exactly those three keys (and perhaps `details`) is read as such an error.
 */
function wireError(node: ts.ObjectLiteralExpression): { code: ts.Expression; statuses: ReturnType<typeof literalNumbers> } | undefined {
  const props = new Map<string, ts.Expression>();
  for (const prop of node.properties) {
    if (ts.isPropertyAssignment(prop) && (ts.isIdentifier(prop.name) || ts.isStringLiteral(prop.name))) props.set(prop.name.text, prop.initializer);
    else if (ts.isShorthandPropertyAssignment(prop)) props.set(prop.name.text, prop.name);
    else return undefined;
  }
  const keys = [...props.keys()].filter((key) => key !== 'details').sort().join(',');
  if (keys !== 'code,message,status') return undefined;
  const code = literalStrings(props.get('code'));
  // Only literals mark an error object; a record that merely copies a code along is not a site.
  if (code.dynamic || code.values.length === 0) return undefined;
  return { code: props.get('code')!, statuses: literalNumbers(props.get('status')) };
}

function scanKernel(): { uses: Use[]; dynamic: Dynamic[] } {
  const helpers = readHelpers();
  const uses: Use[] = [];
  const dynamic: Dynamic[] = [];
  for (const path of kernelFiles(KERNEL)) {
    const source = parse(path);
    const file = relative(ROOT, path).replaceAll('\\', '/');
    const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    const add = (node: ts.Node, codeArg: ts.Expression | undefined, statuses: Array<number | null>, fallback: string | null, statusDynamic: boolean) => {
      const line = lineOf(node);
      if (statusDynamic) dynamic.push({ file, line, what: 'status' });
      const codes = codeArg === undefined ? { values: fallback ? [fallback] : [], dynamic: false } : literalStrings(codeArg);
      for (const code of codes.values) for (const status of statuses) uses.push({ code, status, file, line });
      if (codes.dynamic) dynamic.push({ file, line, what: 'code' });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'KeelError' && path !== ERRORS_FILE) {
        const args = node.arguments ?? [];
        const statuses = literalNumbers(args[0]);
        add(node, args[1], statuses.values.length > 0 ? statuses.values : [null], null, statuses.dynamic);
      } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'KeelError') {
        // Inside errors.ts the constructions are the helpers themselves, read by readHelpers.
      } else if (ts.isObjectLiteralExpression(node)) {
        const wire = wireError(node);
        if (wire) add(node, wire.code, wire.statuses.values.length > 0 ? wire.statuses.values : [null], null, wire.statuses.dynamic);
      } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && helpers.has(node.expression.text)) {
        const helper = helpers.get(node.expression.text)!;
        if (helper.codeIndex === null) add(node, undefined, [helper.status], helper.fixedCode, false);
        else add(node, node.arguments[helper.codeIndex], [helper.status], helper.defaultCode, false);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { uses, dynamic };
}

/** Rows of the catalog tables: | `code` | 409, 422 | meaning | message |. */
function readCatalog(): Map<string, Set<number>> {
  const documented = new Map<string, Set<number>>();
  for (const line of readFileSync(CATALOG, 'utf8').split('\n')) {
    const match = /^\|\s*`([a-z0-9_]+)`\s*\|\s*([0-9][0-9, ]*)\|/.exec(line);
    if (!match) continue;
    const statuses = new Set(match[2]!.split(',').map((s) => Number(s.trim())).filter((n) => n > 0));
    if (documented.has(match[1]!)) throw new Error(`docs/errors.md lists ${match[1]} twice`);
    documented.set(match[1]!, statuses);
  }
  return documented;
}

describe('the error catalog (docs/errors.md)', () => {
  const { uses, dynamic } = scanKernel();
  const documented = readCatalog();
  const used = new Map<string, Use[]>();
  for (const use of uses) used.set(use.code, [...(used.get(use.code) ?? []), use]);

  it('finds the codes of the kernel, including helper defaults and multi-line calls', () => {
    // Sanity of the scanner itself: codes known to exist in each form must be found.
    expect(used.get('not_found')?.[0]?.status).toBe(404); // notFound('Agent not found'): the helper's default code
    expect(used.get('unauthorized')?.[0]?.status).toBe(401); // unauthorized(): fixed code of the helper
    expect(used.has('validation_failed')).toBe(true); // fixed code of validationFailed()
    expect(used.has('browser_auth_unavailable')).toBe(true); // new KeelError(...) spread over two lines
    expect(used.get('permission_denied')?.some((u) => u.file === 'kernel/tenancy/agent-patch.ts')).toBe(true); // multi-line forbidden()
    expect(used.size).toBeGreaterThan(40);
  });

  it('documents every code the kernel answers with', () => {
    const missing = [...used.keys()].filter((code) => !documented.has(code)).sort()
      .map((code) => `${code} (${used.get(code)!.map((u) => `${u.file}:${u.line}`).join(', ')})`);
    expect(missing, `codes missing from docs/errors.md: ${missing.join('; ')}`).toEqual([]);
  });

  it('documents no code the kernel no longer uses', () => {
    const stale = [...documented.keys()].filter((code) => !used.has(code)).sort();
    expect(stale, `codes documented in docs/errors.md but not used in kernel/: ${stale.join(', ')}`).toEqual([]);
  });

  it('documents the statuses each code is answered with', () => {
    const wrong: string[] = [];
    for (const [code, sites] of used) {
      const inCode = new Set(sites.map((s) => s.status).filter((s): s is number => s !== null));
      const inDocs = documented.get(code);
      if (!inDocs) continue;
      const same = inCode.size === inDocs.size && [...inCode].every((s) => inDocs.has(s));
      if (!same) wrong.push(`${code}: code uses ${[...inCode].sort().join(', ')}, docs say ${[...inDocs].sort().join(', ')}`);
    }
    expect(wrong, wrong.join('; ')).toEqual([]);
  });

  it('has no dynamic error codes or statuses beyond the listed ones', () => {
    const found = dynamic.map(({ file, what }) => ({ file, what }));
    const key = (d: { file: string; what: string }) => `${d.file} ${d.what}`;
    const unexpected = dynamic.filter((d) => !DYNAMIC_SITES.some((s) => key(s) === key(d))).map((d) => `${d.file}:${d.line} (${d.what})`);
    expect(unexpected, `dynamic error ${unexpected.join(', ')}: use a literal code or list the site in DYNAMIC_SITES with a reason`).toEqual([]);
    const gone = DYNAMIC_SITES.filter((s) => !found.some((d) => key(d) === key(s))).map(key);
    expect(gone, `listed dynamic sites no longer exist: ${gone.join(', ')}`).toEqual([]);
  });
});
