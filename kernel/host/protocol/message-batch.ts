/**
 * Several messages of the kernel/worker channel sent as one. Each `send` on Node's IPC channel
 * is a serialization and a write of its own, on both sides a good share of a short call's cost
 * (the worker spent about a third of its busy time sending). Under load several messages are
 * ready in one turn of the event loop (the answers of calls whose statements returned
 * together, the invocations of requests read together), so they are held until that turn's
 * I/O callbacks have run and go out together: one serialization, one write, one message
 * event on the far side. A message alone waits for nothing more than the end of its turn.
 */
export interface MessageBatch<T> { t: 'batch'; messages: T[] }

/** What the channel carries: a message, or several in order. */
export type Batched<T> = T | MessageBatch<T>;

/** The messages a received item holds, in the order they were sent. */
export function unbatched<T extends { t: string }>(received: Batched<T>): readonly T[] {
  return received.t === 'batch' ? (received as MessageBatch<T>).messages : [received as T];
}

/**
 * A sender that gathers what is sent during one turn of the event loop and writes it at the
 * end of that turn (setImmediate runs after the turn's I/O callbacks and their microtasks),
 * in order: one message as itself, several as a batch. `flush` writes at once what is held,
 * for a sender about to end its process.
 */
export class BatchingSender<T extends { t: string }> {
  private held: T[] = [];
  private scheduled = false;
  private readonly write: (item: Batched<T>) => void;

  constructor(write: (item: Batched<T>) => void) {
    this.write = write;
  }

  send(message: T): void {
    this.held.push(message);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    const messages = this.held;
    if (messages.length === 0) return;
    this.held = [];
    this.write(messages.length === 1 ? messages[0]! : { t: 'batch', messages });
  }
}
