import type { EnvironmentsContext } from './context.ts';

export interface ProbeCheck { key: string; ok: boolean; message: string }
export interface ProbeResult { ok: boolean; driver: string; summary: string; checks: ProbeCheck[]; probedAt: string }

/** What a capability refusal says, without the stack: its code and message. */
export function refusal(error: unknown): { code: string; message: string } {
  const found = error as { code?: unknown; message?: unknown };
  return { code: typeof found?.code === 'string' ? found.code : 'error', message: typeof found?.message === 'string' ? found.message : String(error) };
}

/**
 * Health of a local root: it lies in a folder an operator mounted for the company, exists, is a
 * directory and the server can create run directories in it. The check runs outside the
 * isolate (`ctx.workspaces.inspect`); it changes nothing on disk.
 */
export async function probeLocal(ctx: EnvironmentsContext, root: string): Promise<ProbeResult> {
  const checks: ProbeCheck[] = [];
  const finish = (summary: string): ProbeResult => ({ ok: checks.every((check) => check.ok), driver: 'local', summary, checks, probedAt: new Date().toISOString() });
  let info;
  try {
    info = await ctx.workspaces.inspect(root);
  } catch (error) {
    const { code, message } = refusal(error);
    checks.push({ key: code === 'path_not_approved' ? 'root_approved' : 'root_reachable', ok: false, message });
    return finish(code === 'path_not_approved' ? 'The root is outside the folders an operator mounted for this company' : 'The root could not be checked');
  }
  checks.push({ key: 'root_approved', ok: true, message: `Inside the mounted folder "${info.folderKey}"` });
  checks.push({ key: 'root_exists', ok: info.exists, message: info.exists ? 'The root exists' : 'Nothing exists at the root' });
  if (!info.exists) return finish('The root does not exist');
  checks.push({ key: 'root_is_directory', ok: info.isDirectory, message: info.isDirectory ? 'The root is a directory' : 'The root is not a directory' });
  checks.push({ key: 'root_writable', ok: info.writable, message: info.writable ? 'Run directories can be created in the root' : 'The root is not writable (a read-only mount, or permissions)' });
  return finish(info.isDirectory && info.writable ? 'The local root is ready' : 'The local root cannot hold run directories');
}
