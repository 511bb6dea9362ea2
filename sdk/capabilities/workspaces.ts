import { defineCapability, method, present } from './define.ts';

/**
 * Working directories on this machine, by absolute path, confined to the folders an operator
 * mounted for the invocation's company (the plugin's `folders` declared in plugin.json, set per
 * company with the local-folder routes): a path outside every mount of that company is refused,
 * and links are resolved and confined as `local.folders` does. For environment roots, leased
 * run directories and the working copies of execution workspaces.
 */
export interface WorkspacePathInfo {
  /** The path as given (normalised). */
  path: string;
  /** The mount it lies in. */
  folderKey: string;
  exists: boolean;
  isDirectory: boolean;
  /** Whether the server may create files in it (a directory of a read-write mount that the server can write). */
  writable: boolean;
}
export interface GitStatus {
  /** False when the path is not inside a git working tree (the other fields are then empty). */
  repository: boolean;
  /** The checked-out branch; null when detached or not a repository. */
  branch: string | null;
  /** No staged, unstaged or untracked changes. */
  clean: boolean;
  /** How many paths have changes (staged, unstaged or untracked). */
  changedFiles: number;
  /** Up to 20 of them, as `git status --porcelain` prints them (`XY path`). */
  sample: string[];
}
export interface WorkspacesCapability {
  /** What is at an absolute path inside a mount of the call's company. */
  inspect(path: string): Promise<WorkspacePathInfo>;
  /** Creates the directory (and missing parents) inside a read-write mount; never through a link. */
  makeDirectory(path: string): Promise<WorkspacePathInfo>;
  /** Removes a directory tree inside a read-write mount (never the mount itself); `removed` false when nothing was there. */
  removeDirectory(path: string): Promise<{ removed: boolean }>;
  /** `git status` of the working tree at the path, run outside the isolate as the unprivileged agent user with the repository's hooks and fsmonitor disabled. */
  gitStatus(path: string): Promise<GitStatus>;
}

const absolutePath = { type: 'string', minLength: 1, maxLength: 4096, pattern: '^/' };
const info = { type: 'object', required: ['path', 'folderKey', 'exists', 'isDirectory', 'writable'] };

export const localWorkspaces = defineCapability<{ workspaces: WorkspacesCapability }>()({
  id: 'local.workspaces',
  summary: "Inspect, create and remove working directories and read their git status, inside the folders an operator mounted for a company",
  members: {
    workspaces: {
      inspect: method('worker', [absolutePath], info, { scope: 'company' }),
      makeDirectory: method('worker', [absolutePath], info, { scope: 'company' }),
      removeDirectory: method('worker', [absolutePath], { type: 'object', required: ['removed'] }, { scope: 'company' }),
      gitStatus: method('worker', [absolutePath], { type: 'object', required: ['repository', 'branch', 'clean', 'changedFiles', 'sample'] }, { scope: 'company' }),
    },
  },
  requiredBy: (manifest) => present(manifest, 'folders'),
  satisfiedAlsoBy: ['local.folders'],
  hint: 'and declare the mounts it may use under folders',
});
