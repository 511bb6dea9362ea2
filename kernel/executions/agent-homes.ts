import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { makeTraversable } from '../db/embedded-postgres.ts';
import type { AgentIdentity } from './agent-user.ts';

export interface HomeContents { variables: Record<string, string>; replace: string[]; files: Array<{ path: string; content: Buffer }>; workdir?: string | null }

/**
 * Each agent's persistent home, `<dataDir>/agent-homes/<agentId>`: HOME for the tool launches
 * of its runs (a coding-agent tool keeps its configuration and sessions there, so a session
 * survives between runs and two agents never share one). The root is the server's (0711: the
 * agent user passes through it, never lists it); each home is the agent user's (0700).
 *
 * The home's contents are the agent's: it may have placed a link anywhere in it. So folders and
 * files are written there by the agent user itself (a short-lived Node process with its uid),
 * never by the server: a link can then lead only where the agent could write anyway.
 */
export class AgentHomes {
  private readonly root: string;
  private prepared: Promise<void> | null = null;

  private readonly identity: AgentIdentity;
  private readonly log: Logger;

  constructor(dataDir: string, identity: AgentIdentity, log: Logger) {
    this.root = join(dataDir, 'agent-homes');
    this.identity = identity;
    this.log = log;
  }

  /** The agent's home, created when missing, with its variables' folders, replaced folders emptied and files written. */
  async prepare(agentId: string, contents: HomeContents): Promise<string> {
    this.prepared ??= (async () => {
      await mkdir(this.root, { recursive: true, mode: 0o711 });
      await chmod(this.root, 0o711);
      if (this.identity.separate) await makeTraversable(join(this.root, 'x'), this.log);
    })();
    await this.prepared;
    const home = join(this.root, agentId);
    await mkdir(home, { recursive: true, mode: 0o700 });
    if (this.identity.separate) await chown(home, this.identity.uid, this.identity.gid);
    const folders = [...new Set([...Object.values(contents.variables), ...(contents.workdir ? [contents.workdir] : [])])];
    if (folders.length === 0 && contents.replace.length === 0 && contents.files.length === 0) return home;
    const job = { folders, replace: contents.replace, files: contents.files.map((file) => ({ path: file.path, content: file.content.toString('base64') })) };
    if (this.identity.separate) await this.writeAsAgent(home, job);
    else await writeInto(home, job);
    return home;
  }

  private writeAsAgent(home: string, job: WriteJob): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', WRITER], {
        cwd: home, env: { LANG: 'C.UTF-8' }, uid: this.identity.uid, gid: this.identity.gid, stdio: ['pipe', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString('utf8')).slice(-2_000); });
      child.stdin.on('error', () => undefined);
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`could not write the agent's home: ${stderr.trim() || `exit code ${code}`}`))));
      child.stdin.end(JSON.stringify(job));
    });
  }
}

interface WriteJob { folders: string[]; replace: string[]; files: Array<{ path: string; content: string }> }

/** The same work in this process, for a server that runs agents as its own user (nothing to guard against). */
async function writeInto(home: string, job: WriteJob): Promise<void> {
  for (const folder of job.folders) await mkdir(join(home, folder), { recursive: true, mode: 0o700 });
  for (const folder of job.replace) await rm(join(home, folder), { recursive: true, force: true });
  for (const file of job.files) {
    await mkdir(dirname(join(home, file.path)), { recursive: true, mode: 0o700 });
    await writeFile(join(home, file.path), Buffer.from(file.content, 'base64'), { mode: 0o600 });
  }
}

/** writeInto as a script for the agent user's process (paths were checked relative by the kernel; cwd is the home). */
const WRITER = `
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);
for (const folder of job.folders) await mkdir(folder, { recursive: true, mode: 0o700 });
for (const folder of job.replace) await rm(folder, { recursive: true, force: true });
for (const file of job.files) {
  await mkdir(dirname(file.path), { recursive: true, mode: 0o700 });
  await writeFile(file.path, Buffer.from(file.content, 'base64'), { mode: 0o600 });
}
`;
