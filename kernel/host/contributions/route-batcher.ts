import type { InvokeMessage } from '../protocol/messages.ts';
import type { InvokeResult } from '../plugin-process.ts';

/**
 * Group commit for a batched route. While a batch is in flight, calls to the same route
 * queue up; when it completes, everything queued goes as the next batch. At low load every
 * call goes alone and waits for nothing; under load one durable commit carries many calls.
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
