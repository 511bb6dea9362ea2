import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * The server process outlives errors that escape every handler: kernel/main.ts installs the
 * process guards, which log an uncaught exception or an unhandled rejection and keep the
 * process serving. Checked in a child process, where nothing else listens for them.
 */
const SCRIPT = `
import { createServer } from 'node:http';
import { createLogger } from './kernel/logger.ts';
import { installProcessGuards } from './kernel/process-guards.ts';
installProcessGuards(createLogger('info'));
const server = createServer((req, res) => res.end('alive'));
server.listen(0, '127.0.0.1', () => {
  setTimeout(() => { throw new Error('thrown from a timer'); }, 1);
  setTimeout(() => { Promise.reject(new Error('rejected with nobody waiting')); }, 5);
  setTimeout(async () => {
    const answer = await (await fetch('http://127.0.0.1:' + server.address().port + '/')).text();
    console.log('answer: ' + answer);
    server.close();
  }, 50);
});
`;

function run(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('process guards', () => {
  it('log an uncaught exception and an unhandled rejection, and the process keeps serving', async () => {
    const { code, output } = await run();
    expect(output).toContain('answer: alive');
    expect(code, output).toBe(0);
    const lines = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: 'uncaught exception; the server keeps running', err: expect.objectContaining({ message: 'thrown from a timer' }) }),
      expect.objectContaining({ level: 50, msg: 'unhandled promise rejection; the server keeps running', err: expect.objectContaining({ message: 'rejected with nobody waiting' }) }),
    ]);
  });
});
