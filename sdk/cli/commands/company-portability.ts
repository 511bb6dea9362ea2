import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { CliError, clientFor, emit, withProgress, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';

/**
 * `keel company export|import` (docs/api/portability.md). A package on disk is a folder:
 * `keel.json` (format, version and the manifest) and the markdown files at the paths the
 * manifest names. Secrets are never in it; the import is given the declared inputs with
 * `--input NAME=VALUE` or `--inputs-file`.
 */
type Options = GlobalOptions & Record<string, any>;
const MANIFEST_FILE = 'keel.json';

/** A path of the package as a file under the folder; anything that would leave it is refused. */
function inside(folder: string, relative: string): string {
  const target = resolve(folder, relative);
  if (relative.split('/').includes('..') || !target.startsWith(resolve(folder) + sep)) throw new CliError('invalid_package', `The package names a file outside its folder: ${relative}`);
  return target;
}

export async function exportCommand(companyId: string, options: Options): Promise<void> {
  const client = clientFor(options);
  if (options.preview) {
    const summary = await client.post<Record<string, any>>(path`/api/companies/${companyId}/exports/preview`, {});
    const counts = Object.entries(summary.counts as Record<string, number>).map(([kind, n]) => `${kind}: ${n}`).join(', ');
    emit(options, [`${summary.company.name}: ${counts}`, `${summary.files.length} files, ${summary.inputs.length} declared inputs`], summary);
    return;
  }
  if (!options.out) throw new CliError('usage', 'company export needs --out <folder> (or --preview)');
  const pkg = await withProgress(options, `Exporting company ${companyId}`, () => client.post<Record<string, any>>(path`/api/companies/${companyId}/export`, {}));
  const folder = resolve(options.out);
  await withProgress(options, `Writing ${Object.keys(pkg.files).length + 1} files to ${folder}`, async () => {
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, MANIFEST_FILE), `${JSON.stringify({ format: pkg.format, version: pkg.version, manifest: pkg.manifest }, null, 2)}\n`);
    for (const [relative, content] of Object.entries(pkg.files as Record<string, string>)) {
      const target = inside(folder, relative);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, content);
    }
  });
  const inputs = (pkg.manifest.inputs as Array<{ name: string }>).map((input) => input.name);
  emit(options, [
    `Exported ${pkg.manifest.company.name} to ${folder}: ${pkg.manifest.agents.length} agents, parts ${Object.keys(pkg.manifest.parts).join(', ') || 'none'}`,
    ...(inputs.length ? [`Inputs the import will need: ${inputs.join(', ')}`] : []),
  ], { folder, manifest: pkg.manifest, files: Object.keys(pkg.files) });
}

async function readPackage(folder: string): Promise<Record<string, any>> {
  let head: Record<string, any>;
  try {
    head = JSON.parse(await readFile(join(folder, MANIFEST_FILE), 'utf8'));
  } catch (error) {
    throw new CliError('invalid_package', `${join(folder, MANIFEST_FILE)} is missing or not JSON: ${(error as Error).message}`);
  }
  const manifest = head.manifest ?? {};
  const paths = new Set<string>([manifest.company?.descriptionPath, ...(manifest.agents ?? []).map((agent: any) => agent.instructionsPath),
    ...Object.values(manifest.parts ?? {}).flatMap((part: any) => part.files ?? [])].filter((p): p is string => typeof p === 'string'));
  const files: Record<string, string> = {};
  for (const relative of paths) {
    try { files[relative] = await readFile(inside(folder, relative), 'utf8'); } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError('invalid_package', `The package names ${relative}, which is not in ${folder}`);
    }
  }
  return { format: head.format, version: head.version, manifest, files };
}

async function inputsOf(options: Options): Promise<Record<string, string>> {
  const inputs: Record<string, string> = options.inputsFile ? JSON.parse(await readFile(options.inputsFile, 'utf8')) : {};
  for (const pair of (options.input ?? []) as string[]) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliError('usage', `--input takes NAME=VALUE, got ${JSON.stringify(pair)}`);
    inputs[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return inputs;
}

export async function importCommand(folder: string, options: Options): Promise<void> {
  const pkg = await withProgress(options, `Reading ${resolve(folder)}`, () => readPackage(resolve(folder)));
  const body: Record<string, unknown> = { package: pkg, collisionStrategy: options.collision ?? 'rename', inputs: await inputsOf(options) };
  const client = clientFor(options);
  let route: string;
  if (options.companyId) {
    route = path`/api/companies/${options.companyId}/imports/${options.preview ? 'preview' : 'apply'}`;
  } else {
    body.target = options.into ? { mode: 'existing_company', companyId: options.into } : { mode: 'new_company', ...(options.name ? { name: options.name } : {}) };
    route = options.preview ? '/api/companies/import/preview' : '/api/companies/import';
  }
  // An import goes with an Idempotency-Key (the one given, else a fresh one) and is repeated with it if no answer comes.
  const idempotencyKey = options.idempotencyKey ? String(options.idempotencyKey) : undefined;
  const answer = await withProgress(options, options.preview ? 'Previewing the import' : 'Importing', () => (options.preview
    ? client.post<Record<string, any>>(route, body, idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : {})
    : client.create<Record<string, any>>(route, body, { idempotencyKey })));
  const c = answer.counts as { create: number; update: number; skip: number };
  const missing = (answer.inputs?.missing ?? []) as string[];
  emit(options, [
    options.preview ? `Would create ${c.create}, update ${c.update}, skip ${c.skip}` : `Imported into company ${answer.companyId}: created ${c.create}, updated ${c.update}, skipped ${c.skip}`,
    ...(answer.approvalIds?.length ? [`${answer.approvalIds.length} new agents wait for board approval`] : []),
    ...(missing.length ? [`Missing inputs (pass --input NAME=VALUE): ${missing.join(', ')}`] : []),
  ], answer);
}
