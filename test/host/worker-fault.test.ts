import { fork } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { workerEntry } from '../../kernel/host/worker-entry.ts';

/**
 * A fault of the worker process's own code ends the process, as Node ends it, but the kernel
 * hears what the fault was (a `fatal` message) before the exit, rather than the closing lines of
 * Node's print to stderr.
 */
describe('a plugin worker process whose own code faults', () => {
  it('tells the kernel the fault, then exits', async () => {
    const child = fork(await workerEntry(), [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    const messages: Array<{ t: string; reason?: string }> = [];
    child.on('message', (message: { t: string; reason?: string }) => messages.push(message));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // A load without its settings: the host code reads settings that are not there.
    child.send({ t: 'load', slot: 'slot-1', init: null });
    expect(await exited).toBe(70);
    const fatal = messages.find((message) => message.t === 'fatal');
    expect(fatal?.reason).toMatch(/^worker host fault: TypeError: Cannot read properties of null .* \| at /);
  });
});
