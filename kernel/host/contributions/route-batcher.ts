import type { InvokeMessage } from '../protocol/messages.ts';
import type { InvokeResult, PluginProcess } from '../plugin-process.ts';

/**
 * Calls that must be waiting before a batch starts beside one already in flight. Fewer ride
 * along with the next batch, which starts when the one in flight completes: each batch is a
 * transaction, with its round trips, its commit and its CPU, and on a busy machine many small
 * batches in parallel do less than a few large ones.
 */
const OVERLAP_MIN_ITEMS = 8;

/**
 * Group commit for a batched route. While a batch is in flight, calls to the same route
 * queue up; when it completes, everything queued goes as the next batch. At low load every
 * call goes alone and waits for nothing; under load one durable commit carries many calls.
 * Up to `maxInFlight` batches run at once, a further one starting as soon as enough calls
 * wait (OVERLAP_MIN_ITEMS): one batch stores its calls while another holds the rows they
 * share and commits, so the round trips of one overlap with the other's turn.
 */
export class RouteBatcher {
  private readonly queue: Array<{ message: InvokeMessage; resolve(result: InvokeResult): void }> = [];
  private inFlight = 0;
  private readonly send: (messages: InvokeMessage[]) => Promise<InvokeResult[]>;
  private readonly maxItems: number;
  private readonly maxInFlight: number;

  constructor(send: (messages: InvokeMessage[]) => Promise<InvokeResult[]>, options: { maxItems: number; maxInFlight?: number }) {
    this.send = send;
    this.maxItems = options.maxItems;
    this.maxInFlight = options.maxInFlight ?? 1;
  }

  submit(message: InvokeMessage): Promise<InvokeResult> {
    return new Promise((resolve) => {
      this.queue.push({ message, resolve });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      if (this.inFlight > 0 && this.queue.length < Math.min(OVERLAP_MIN_ITEMS, this.maxItems)) return;
      const batch = this.queue.splice(0, this.maxItems);
      this.inFlight++;
      this.send(batch.map((entry) => entry.message)).then(
        (results) => batch.forEach((entry, index) => entry.resolve(results[index] ?? { ok: false, error: { status: 500, code: 'plugin_error', message: 'No result for a batched call' }, activityWritten: false })),
        (error: Error) => batch.forEach((entry) => entry.resolve({ ok: false, error: { status: 500, code: 'plugin_error', message: error.message }, activityWritten: false })),
      ).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }
}

/** The batchers of every batched route of the running plugin processes, one per route and process. */
export class RouteBatchers {
  private readonly batchers = new Map<string, { process: PluginProcess; batcher: RouteBatcher }>();

  of(plugin: string, process: PluginProcess, batch: { key: string; maxItems: number; maxInFlight: number }): RouteBatcher {
    const key = `${plugin}/${batch.key}`;
    const known = this.batchers.get(key);
    // A restarted or upgraded plugin has a new process: its batches start afresh.
    if (known && known.process === process) return known.batcher;
    const batcher = new RouteBatcher((messages) => process.invokeBatch(messages), { maxItems: batch.maxItems, maxInFlight: batch.maxInFlight });
    this.batchers.set(key, { process, batcher });
    return batcher;
  }
}
