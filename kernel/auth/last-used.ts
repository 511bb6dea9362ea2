import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';

/**
 * Records `lastUsedAt` of API keys without a write per request: the first use of a key
 * (and the first use after a minute) is written at once in the background, later uses are
 * coalesced and flushed together. Stored values are therefore accurate to about a minute.
 */
const COALESCE_MS = 60_000;

export class LastUsedRecorder {
  private readonly written = new Map<string, number>();
  private readonly pending = new Map<string, { table: 'agent_api_keys' | 'board_api_keys'; at: Date }>();
  private timer?: NodeJS.Timeout;
  private readonly db: Database;
  private readonly log: Logger;

  constructor(db: Database, log: Logger) {
    this.db = db;
    this.log = log;
  }

  start(): void {
    this.timer = setInterval(() => { void this.flush(); }, COALESCE_MS / 4);
    this.timer.unref();
  }

  touch(table: 'agent_api_keys' | 'board_api_keys', id: string): void {
    const now = Date.now();
    const last = this.written.get(id);
    if (last === undefined || now - last > COALESCE_MS) {
      this.written.set(id, now);
      this.db.exec(`update ${table} set last_used_at = ? where id = ?`, [new Date(now), id])
        .catch((error) => this.log.warn({ err: error }, 'could not record lastUsedAt'));
      return;
    }
    this.pending.set(id, { table, at: new Date(now) });
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.entries()];
    this.pending.clear();
    for (const table of ['agent_api_keys', 'board_api_keys'] as const) {
      const rows = batch.filter(([, v]) => v.table === table);
      if (rows.length === 0) continue;
      const values = rows.map(() => '(?::uuid, ?::timestamptz)').join(', ');
      const params = rows.flatMap(([id, v]) => [id, v.at]);
      await this.db.exec(
        `update ${table} k set last_used_at = v.at from (values ${values}) as v(id, at)
         where k.id = v.id and (k.last_used_at is null or k.last_used_at < v.at)`, params,
      ).catch((error) => this.log.warn({ err: error }, 'could not flush lastUsedAt'));
      for (const [id] of rows) this.written.set(id, Date.now());
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
