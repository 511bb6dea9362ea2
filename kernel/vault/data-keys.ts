import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { open, seal } from './cipher.ts';
import type { Keyring } from './keyring.ts';

/**
 * One data key per company, wrapped by the primary master key. Secret values are encrypted
 * with the data key, so rotating the master key re-wraps a handful of data keys and never
 * touches a value. Unwrapped data keys are cached in memory by company.
 */
export interface DataKey { id: string; key: Buffer }

const wrapAad = (companyId: string, dataKeyId: string) => `keel-data-key:${companyId}:${dataKeyId}`;

export class DataKeys {
  private readonly cache = new Map<string, DataKey>();
  private readonly byKeyId = new Map<string, DataKey>();
  private readonly keyring: Keyring;

  constructor(keyring: Keyring) {
    this.keyring = keyring;
  }

  /** The company's data key, created on first use (race-safe through the unique index). */
  async forCompany(db: Queryable, companyId: string): Promise<DataKey> {
    const cached = this.cache.get(companyId);
    if (cached) return cached;
    let row = await db.maybeOne('select * from vault_data_keys where company_id = ?', [companyId]);
    if (!row) {
      const id = (await db.maybeOne<{ id: string }>('select gen_random_uuid() as id'))!.id;
      const material = randomBytes(32);
      const master = this.keyring.primary;
      const wrapped = seal(master.key, material, wrapAad(companyId, id));
      await db.query(
        `insert into vault_data_keys (id, company_id, master_key_id, wrapped_key, nonce, tag) values (?, ?, ?, ?, ?, ?)
         on conflict (company_id) do nothing`,
        [id, companyId, master.id, wrapped.ciphertext, wrapped.nonce, wrapped.tag]);
      row = await db.maybeOne('select * from vault_data_keys where company_id = ?', [companyId]);
    }
    const key = await this.unwrap(row!);
    this.cache.set(companyId, key);
    return key;
  }

  /** The data key with this id (versions name the key that sealed them). */
  async byId(db: Queryable, companyId: string, dataKeyId: string): Promise<DataKey> {
    const cached = this.cache.get(companyId);
    if (cached?.id === dataKeyId) return cached;
    const known = this.byKeyId.get(dataKeyId);
    if (known) return known;
    const row = await db.maybeOne('select * from vault_data_keys where id = ? and company_id = ?', [dataKeyId, companyId]);
    if (!row) throw integrityError(`data key ${dataKeyId} of company ${companyId} is missing`);
    const key = await this.unwrap(row);
    this.byKeyId.set(dataKeyId, key);
    return key;
  }

  private async unwrap(row: Record<string, any>): Promise<DataKey> {
    const master = await this.keyring.get(row.master_key_id);
    if (!master) throw integrityError(`master key ${row.master_key_id} is not available to this process`);
    try {
      const material = open(master, { nonce: row.nonce, ciphertext: row.wrapped_key, tag: row.tag }, wrapAad(row.company_id, row.id));
      return { id: row.id, key: material };
    } catch {
      throw integrityError(`data key ${row.id} failed authentication`);
    }
  }

  /** Re-wraps one data key under the primary master key; the key material is unchanged. */
  async rewrap(db: Queryable, row: Record<string, any>): Promise<void> {
    const { key } = await this.unwrap(row);
    const master = this.keyring.primary;
    const wrapped = seal(master.key, key, wrapAad(row.company_id, row.id));
    await db.exec(
      `update vault_data_keys set master_key_id = ?, wrapped_key = ?, nonce = ?, tag = ?, rewrapped_at = now()
       where id = ? and master_key_id = ?`,
      [master.id, wrapped.ciphertext, wrapped.nonce, wrapped.tag, row.id, row.master_key_id]);
  }

  forget(companyId: string): void {
    const key = this.cache.get(companyId);
    if (key) this.byKeyId.delete(key.id);
    this.cache.delete(companyId);
  }
}

/** Stored key material or ciphertext that fails authentication: never the caller's fault, never silent. */
export function integrityError(detail: string): KeelError {
  return new KeelError(500, 'vault_integrity_error', `Secret storage failed an integrity check: ${detail}`, { expose: true });
}
