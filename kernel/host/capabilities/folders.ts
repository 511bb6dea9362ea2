import { readdirSync } from 'node:fs';

/**
 * The capability folders are the registration: one folder of this directory per SDK
 * declaration, named after its id (`agents.pause` -> agents-pause/), holding what serves it:
 * kernel.ts (its kernel unit), worker.ts (its worker unit), bridge.sql (its `keel_bridge`
 * functions). No list names them: the kernel imports every folder's kernel.ts at load
 * (units.ts), the worker's bundle imports every folder's worker.ts found when it is built
 * (worker-units-module.ts), and the migration runner installs every bridge.sql
 * (kernel/db/bridge-functions.ts). The loaded units are checked by unit-check.ts.
 */
export const CAPABILITY_FOLDERS = new URL('./', import.meta.url);

/** The capability folders, sorted: every subdirectory of this directory. */
export function capabilityFolders(): string[] {
  return readdirSync(CAPABILITY_FOLDERS, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
}

/** The folders holding a unit of `side` (kernel.ts or worker.ts); a folder holding neither is an error. */
export function unitFolders(side: 'kernel' | 'worker'): string[] {
  return capabilityFolders().filter((folder) => {
    const files = readdirSync(new URL(`${folder}/`, CAPABILITY_FOLDERS));
    if (!files.includes('kernel.ts') && !files.includes('worker.ts')) throw new Error(`Capability folder kernel/host/capabilities/${folder}/ holds neither kernel.ts nor worker.ts (kernel/host/README.md, "Adding a capability")`);
    return files.includes(`${side}.ts`);
  });
}
