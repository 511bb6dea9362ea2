import { describe, expect, it } from 'vitest';
import { BatchingSender, unbatched, type Batched } from '../../kernel/host/protocol/message-batch.ts';

type Message = { t: string; n: number };
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('messages of the kernel/worker channel', () => {
  it('go as one write per turn of the event loop: alone as themselves, several as a batch in order', async () => {
    const writes: Array<Batched<Message>> = [];
    const sender = new BatchingSender<Message>((item) => writes.push(item));
    sender.send({ t: 'result', n: 1 });
    expect(writes).toEqual([]);
    await turn();
    expect(writes).toEqual([{ t: 'result', n: 1 }]);
    for (let n = 2; n <= 4; n++) sender.send({ t: 'result', n });
    await turn();
    expect(writes[1]).toEqual({ t: 'batch', messages: [{ t: 'result', n: 2 }, { t: 'result', n: 3 }, { t: 'result', n: 4 }] });
    expect(writes.flatMap((item) => unbatched(item)).map((m) => m.n)).toEqual([1, 2, 3, 4]);
  });

  it('writes what it holds at once when flushed (a process about to exit), and nothing twice', async () => {
    const writes: Array<Batched<Message>> = [];
    const sender = new BatchingSender<Message>((item) => writes.push(item));
    sender.send({ t: 'result', n: 1 });
    sender.send({ t: 'fatal', n: 2 });
    sender.flush();
    expect(writes).toEqual([{ t: 'batch', messages: [{ t: 'result', n: 1 }, { t: 'fatal', n: 2 }] }]);
    await turn();
    expect(writes).toHaveLength(1);
  });
});
