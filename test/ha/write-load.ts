/**
 * Clients writing through several Keel processes as an agent or the command-line client does:
 * cost events and issue creates, each with an Idempotency-Key, the same request sent again
 * (same key, same body) after an error or no answer until it is acknowledged. Records every
 * answer so a test can tell acknowledged writes, 503s and anything unexpected apart.
 */
export interface AcknowledgedWrite { kind: 'cost' | 'issue'; key: string; id: string; server: number; sentAt: number; ackedAt: number }
export interface Answer { server: number; kind: 'cost' | 'issue'; key: string; status: number; code?: string; message?: string; retryAfter?: string | null; error?: string }

export interface Load {
  /** Resolves once `count` writes are acknowledged in all. */
  acknowledged(count: number): Promise<void>;
  /** Resolves once every server acknowledged `count` requests sent after `time`. */
  servedAfter(time: number, count: number): Promise<void>;
  /** Stops the clients once each has its write in hand acknowledged. */
  stop(): Promise<void>;
  acknowledgedWrites(): AcknowledgedWrite[];
  /** When the first request sent after `time` was acknowledged. */
  firstAcknowledgedAfter(time: number): number;
  answersOf(status: number): Answer[];
  /** Answers other than an acknowledgement or a 503. */
  unexpected(): Answer[];
}

const REQUEST_TIMEOUT_MS = 20_000;
const RETRY_DELAY_MS = 100;

/** `prefix` keeps the idempotency keys of two loads on one company apart. */
export function startLoad(options: { urls: string[]; companyId: string; agentId: string; clientsPerServer: number; prefix: string }): Load {
  const writes: AcknowledgedWrite[] = [];
  const answers: Answer[] = [];
  const waiters = new Set<() => void>();
  let next = 0;
  let stopping = false;
  const wake = () => { for (const waiter of [...waiters]) waiter(); };
  const until = (done: () => boolean) => new Promise<void>((resolve) => {
    const check = () => { if (done()) { waiters.delete(check); resolve(); } };
    waiters.add(check);
    check();
  });

  const write = async (server: number, kind: 'cost' | 'issue', key: string) => {
    const url = options.urls[server]!;
    const [path, body] = kind === 'cost'
      ? [`/api/companies/${options.companyId}/cost-events`, { agentId: options.agentId, provider: 'openai', model: 'gpt', costCents: 1 + (key.length % 7), occurredAt: new Date().toISOString() }]
      : [`/api/companies/${options.companyId}/issues`, { title: key }];
    const payload = JSON.stringify(body);
    for (;;) {
      const sentAt = Date.now();
      try {
        const response = await fetch(url + path, {
          method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: payload, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const answer = await response.json().catch(() => ({})) as { id?: string; code?: string; error?: string };
        if (response.status === 200 || response.status === 201) {
          writes.push({ kind, key, id: String(answer.id), server, sentAt, ackedAt: Date.now() });
          wake();
          return;
        }
        answers.push({ server, kind, key, status: response.status, code: answer.code, message: answer.error, retryAfter: response.headers.get('retry-after') });
      } catch (error) {
        answers.push({ server, kind, key, status: 0, error: (error as Error).message });
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    }
  };

  const clients = options.urls.flatMap((_, server) => Array.from({ length: options.clientsPerServer }, async () => {
    while (!stopping) {
      const n = next++;
      const kind = n % 2 === 0 ? 'cost' : 'issue';
      await write(server, kind, `ha-${options.prefix}-${kind}-${n}`);
    }
  }));

  return {
    acknowledged: (count) => until(() => writes.length >= count),
    servedAfter: (time, count) => until(() => options.urls.every((_, server) => writes.filter((w) => w.server === server && w.sentAt >= time).length >= count)),
    async stop() {
      stopping = true;
      await Promise.all(clients);
    },
    acknowledgedWrites: () => [...writes],
    firstAcknowledgedAfter: (time) => Math.min(...writes.filter((w) => w.sentAt >= time).map((w) => w.ackedAt)),
    answersOf: (status) => answers.filter((answer) => answer.status === status),
    unexpected: () => answers.filter((answer) => answer.status !== 503),
  };
}
