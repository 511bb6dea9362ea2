import { CAPABILITY_FOLDERS, unitFolders } from './folders.ts';
import { checkedUnit } from './unit-check.ts';
import { isKernelUnit, type KernelUnit } from './unit.ts';

/**
 * The kernel side of every capability folder (folders.ts): each folder's kernel.ts, found and
 * imported when this module loads, so adding a capability edits no list. Each is checked
 * (unit-check.ts): a unit made by kernelUnit() against a declaration of sdk/capabilities, in the
 * folder named after it; anything else stops the start with an error naming the folder. The
 * worker process loads worker-units.ts instead, whose list its bundle is built with. The broker's
 * table, the bridge grants and the kernel-row grants are derived from these units (unit.ts);
 * test/host/capability-servers.test.ts fails when a declared method has no server or two.
 *
 * A folder's kernel.ts must not import this module, even indirectly (through broker.ts,
 * extension-host.ts or plugin-databases.ts): its import would wait for this one, which waits for
 * it (the test checks the import graph).
 */
export const KERNEL_UNITS: readonly KernelUnit[] = await Promise.all(unitFolders('kernel').map(async (folder) => {
  const module: { readonly [name: string]: unknown } = await import(new URL(`${folder}/kernel.ts`, CAPABILITY_FOLDERS).href);
  return checkedUnit(folder, 'kernel', module, isKernelUnit);
}));
