import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { Vault } from '../vault/vault.ts';

/** How long a revealed key is reused: a rotated or deleted key stops being sent within this. */
const CACHE_MS = 10_000;
const CACHE_ENTRIES = 1024;

interface Cached { value: string; version: number; until: number }

/**
 * The provider key of a proxy answer, revealed from the vault for the request's company only
 * (a secret of another company does not exist as far as this call goes). Revealing means a
 * database read and a decryption on the first-byte path, so a key is kept briefly per
 * (company, secret, version); the audit record of each use is written off that path.
 */
export class ProxyCredentials {
  private readonly cache = new Map<string, Cached>();
  private readonly deps: { db: Database; vault: Vault; log: Logger };

  constructor(deps: ProxyCredentials['deps']) {
    this.deps = deps;
  }

  async reveal(companyId: string, secretId: string, selector: number | 'latest'): Promise<{ value: string; version: number }> {
    const key = `${companyId}:${secretId}:${selector}`;
    const cached = this.cache.get(key);
    if (cached && cached.until > Date.now()) return cached;
    let revealed: { value: string; version: number };
    try {
      revealed = await this.deps.vault.reveal(this.deps.db, companyId, secretId, selector);
    } catch (error) {
      if (error instanceof KeelError && error.status < 500) {
        throw new KeelError(502, 'proxy_credential_unavailable', `The provider key of this call could not be read from the vault: ${error.message}`, { details: { reason: error.code }, expose: true });
      }
      throw error;
    }
    if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { ...revealed, until: Date.now() + CACHE_MS });
    return revealed;
  }

  /** The audit record of one use of the key (never its value); written after the call has started. */
  audit(entry: { companyId: string; plugin: string; secretId: string; version: number; callId: string }): void {
    setImmediate(() => {
      this.deps.db.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, details) values (?, 'system', ?, 'secret.proxy_resolved', ?::jsonb)`,
        [entry.companyId, `plugin:${entry.plugin}`, JSON.stringify({ plugin: entry.plugin, secretId: entry.secretId, version: entry.version, callId: entry.callId })],
      ).catch((error: unknown) => this.deps.log.error({ err: error, callId: entry.callId }, 'could not audit a proxied call\'s key'));
    });
  }
}
