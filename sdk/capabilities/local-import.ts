import { defineCapability, method } from './define.ts';
import { text } from './schemas.ts';

/** One file under the path read: relative `/`-separated path, text or base64 bytes; `content` null when over the per-file cap. */
export interface LocalImportFile { path: string; encoding: 'utf8' | 'base64'; content: string | null; size: number }
export interface LocalImportTree {
  /** The path as resolved (symbolic links followed). */
  path: string;
  kind: 'file' | 'directory';
  files: LocalImportFile[];
  /** Entries left out, with why (a link leading outside the roots, a special file, a cap reached). */
  skipped: Array<{ path: string; reason: string }>;
}

/**
 * Read-only access to server paths inside the roots an operator configured for imports
 * (`plugins.localImport.roots`; in local_trusted mode by default the instance's temporary
 * directory and `<dataDir>/skills`), never the rest of the data directory. Symbolic links are
 * resolved and must stay inside the roots. Agent callers are refused unless the operator set
 * `plugins.localImport.allowAgents`. Caps: 2,000 files, depth 12, 1 MiB per file (larger ones
 * are listed without content), 8 MiB in all (an answer crosses into the plugin's isolate); `.git` and `node_modules` are not walked.
 */
export interface LocalImportCapability {
  /** A file, or a directory with everything under it. */
  read(path: string): Promise<LocalImportTree>;
}

export const localImport = defineCapability<{ localImport: LocalImportCapability }>()({
  id: 'local.import',
  summary: 'Read files below the server paths an operator allows for imports (read-only)',
  members: {
    localImport: {
      read: method('kernel', [text(4096)], { type: 'object', required: ['path', 'kind', 'files', 'skipped'] }, { scope: 'company' }),
    },
  },
});
