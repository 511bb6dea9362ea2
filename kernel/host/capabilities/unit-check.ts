import { CAPABILITIES } from '../../../sdk/capabilities/index.ts';
import type { CapabilitySpec } from '../../../sdk/capabilities/define.ts';

/**
 * The check of a capability folder's unit (folders.ts), made where it is loaded: in the kernel
 * (units.ts) and in the worker (worker-units.ts). It imports no kernel-process or worker code.
 */
export type UnitSide = 'kernel' | 'worker';

/** The folder that serves the declaration `spec`. */
export function folderOf(spec: CapabilitySpec): string {
  return spec.id.replaceAll('.', '-');
}

const DECLARED: ReadonlySet<CapabilitySpec> = new Set(CAPABILITIES);
const EXPORTS: Record<UnitSide, string> = { kernel: 'kernelSide', worker: 'workerSide' };
const MAKERS: Record<UnitSide, string> = { kernel: 'kernelUnit', worker: 'workerUnit' };

/**
 * The unit a folder's `<side>.ts` exports, checked when it is loaded: it must be made by
 * kernelUnit()/workerUnit() (`isUnit`), registered against a declaration object of
 * sdk/capabilities (the object itself, not a copy with the same id), and the folder must be
 * named after that declaration. Anything else stops the start with an error naming the folder.
 */
export function checkedUnit<U extends { spec: CapabilitySpec }>(folder: string, side: UnitSide, module: { readonly [name: string]: unknown }, isUnit: (value: unknown) => value is U): U {
  const where = `kernel/host/capabilities/${folder}/${side}.ts`;
  const unit = module[EXPORTS[side]];
  if (!isUnit(unit)) throw new Error(`${where} must export \`${EXPORTS[side]}\`, made by ${MAKERS[side]}(<its declaration from sdk/capabilities>, ...)`);
  if (!DECLARED.has(unit.spec)) throw new Error(`${where} registers against a capability '${unit.spec.id}' that is not one of the declarations of sdk/capabilities (CAPABILITIES)`);
  if (folderOf(unit.spec) !== folder) throw new Error(`${where} serves ${unit.spec.id}: its folder must be named ${folderOf(unit.spec)}`);
  return unit;
}
