import type { KernelToWorker, SlotReport, WorkerToKernel } from '../protocol/messages.ts';
import { HostedPlugin } from './hosted-plugin.ts';
import { BatchingSender, unbatched, type Batched } from '../protocol/message-batch.ts';

/**
 * The extension-host worker process. It holds one plugin (a third-party plugin's own worker) or
 * several (the first-party plugins' shared worker), each in its own isolate with its own
 * database connections and deadlines (hosted-plugin.ts). A plugin that must start afresh is
 * unloaded here and loaded again by the kernel; a fatal V8 error ends this process only, with
 * the plugins in it, and the kernel's supervisor loads them again into its warm standby
 * process (which starts as this one did, and waits for its first `load`).
 */
// Reports ready in one turn of the event loop (the answers of calls whose statements returned
// together) go to the kernel as one message (protocol/message-batch.ts).
const channel = new BatchingSender<WorkerToKernel>((item) => { if (process.connected) process.send!(item); });
const send = (message: WorkerToKernel) => channel.send(message);
const plugins = new Map<string, HostedPlugin>();

function load(slot: string, plugin: HostedPlugin): void {
  const started = performance.now();
  plugins.set(slot, plugin);
  try {
    const codeCache = plugin.boot();
    send({ t: 'loaded', slot, bootMs: performance.now() - started, ...(codeCache ? { codeCache } : {}) });
  } catch (error) {
    plugins.delete(slot);
    void plugin.unload();
    send({ t: 'load_failed', slot, error: { status: 500, code: 'plugin_boot_failed', message: String((error as Error)?.message ?? error).split('\n')[0]!.slice(0, 1000) } });
  }
}

function hosted(slot: string, init: Extract<KernelToWorker, { t: 'load' }>['init']): HostedPlugin {
  const plugin: HostedPlugin = new HostedPlugin(init, {
    send: (report: SlotReport) => { if (plugins.get(slot) === plugin) send({ ...report, slot } as WorkerToKernel); },
    restart: (reason) => {
      if (plugins.get(slot) !== plugin) return;
      plugins.delete(slot);
      void plugin.unload().finally(() => send({ t: 'restart', slot, reason }));
    },
    catastrophic: (message) => {
      send({ t: 'fatal', reason: `V8 catastrophic error in ${init.pluginKey}: ${message}`, pluginKey: init.pluginKey });
      channel.flush();
      process.exit(71);
    },
  });
  return plugin;
}

async function shutdown(): Promise<void> {
  await Promise.all([...plugins.values()].map((plugin) => plugin.unload()));
  channel.flush();
  process.exit(0);
}

process.on('message', (received: Batched<KernelToWorker>) => {
  for (const message of unbatched(received)) receive(message);
});

function receive(message: KernelToWorker): void {
  switch (message.t) {
    case 'load':
      load(message.slot, hosted(message.slot, message.init));
      break;
    case 'unload': {
      const plugin = plugins.get(message.slot);
      plugins.delete(message.slot);
      void plugin?.unload();
      break;
    }
    case 'shutdown':
      void shutdown();
      break;
    default:
      plugins.get(message.slot)?.receive(message);
  }
}
process.on('disconnect', () => process.exit(0));
// A fault of this process's own code (plugin code runs in isolates and fails only its own
// call): nothing in the process can be trusted to go on, so it ends, as Node would end it, but
// it tells the kernel what the fault was first. Node's own print of it went to stderr, of
// which the kernel kept the last lines only, and those are its closing `}` and version line.
process.on('uncaughtException', (error) => endOnFault(error));
process.on('unhandledRejection', (reason) => endOnFault(reason));

function endOnFault(fault: unknown): never {
  const text = fault instanceof Error ? (fault.stack ?? `${fault.name}: ${fault.message}`) : String(fault);
  const code = (fault as { code?: unknown } | null)?.code;
  const coded = typeof code === 'string' ? ` (code ${code})` : '';
  send({ t: 'fatal', reason: `worker host fault${coded}: ${text.split('\n').slice(0, 6).map((line) => line.trim()).join(' | ')}`.slice(0, 2000) });
  channel.flush();
  process.exit(70);
}
// The kernel owns this process's lifetime: it ends it with `shutdown` after its requests have
// drained, and the worker exits by itself when the kernel is gone (disconnect). A Ctrl-C or a
// service manager's SIGTERM sent to every process of the group must not end it earlier.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
