import { spawn } from 'node:child_process';

export interface CommandResult { code: number | null; stdout: string; stderr: string }

/** Runs one of the kernel's operator commands (kernel/tools/NAME.ts) as its own process. */
export function runTool(tool: string, args: string[], env: Record<string, string | undefined>): Promise<CommandResult> {
  const childEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', `kernel/tools/${tool}.ts`, ...args], { env: childEnv, cwd: process.cwd() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: stdout.trim(), stderr: stderr.trim() }));
  });
}
