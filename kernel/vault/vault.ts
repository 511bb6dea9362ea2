import type { Logger } from 'pino';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { conflict, KeelError, notFound } from '../http/errors.ts';
import { open, seal } from './cipher.ts';
import { DataKeys, integrityError } from './data-keys.ts';
import type { Keyring } from './keyring.ts';
import { LOCAL_ENCRYPTED, PROVIDERS, usableProvider, type ProviderDescriptor } from './providers.ts';

export interface SecretMetadata {
  id: string;
  companyId: string;
  name: string;
  provider: string;
  externalRef: string | null;
  latestVersion: number;
  description: string | null;
  createdByAgentId: string | null;
  createdByUserId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Creator { agentId?: string | null; userId?: string | null }

export const MAX_SECRET_VALUE_BYTES = 64 * 1024;
const versionAad = (companyId: string, secretId: string, version: number) => `keel-secret:${companyId}:${secretId}:${version}`;

/**
 * The kernel's secret vault: metadata in `secrets`, immutable encrypted values in
 * `secret_versions`. Plaintext exists only in memory, on its way in (create, rotate) or out
 * (resolution for a run, the run-bound read route).
 */
export class Vault {
  readonly dataKeys: DataKeys;
  private readonly log: Logger;

  constructor(keyring: Keyring, log: Logger) {
    this.dataKeys = new DataKeys(keyring);
    this.log = log;
  }

  providers(): readonly ProviderDescriptor[] {
    return PROVIDERS;
  }

  async create(db: Queryable, input: { companyId: string; name: string; value: string; provider?: string; description?: string | null; externalRef?: string | null; creator: Creator }): Promise<SecretMetadata> {
    const provider = usableProvider(input.provider ?? LOCAL_ENCRYPTED);
    if (provider.requiresExternalRef && !input.externalRef) {
      throw new KeelError(422, 'external_ref_required', `Secret provider "${provider.id}" requires externalRef`);
    }
    const existing = await db.maybeOne('select id from secrets where company_id = ? and name = ?', [input.companyId, input.name]);
    if (existing) throw conflict(`A secret named "${input.name}" already exists in this company`, { secretId: existing.id }, 'secret_name_conflict');
    let row: Row | undefined;
    try {
      row = await db.maybeOne(
        `insert into secrets (company_id, name, provider, external_ref, latest_version, description, created_by_agent_id, created_by_user_id)
         values (?, ?, ?, ?, 1, ?, ?, ?) returning *`,
        [input.companyId, input.name, provider.id, input.externalRef ?? null, input.description ?? null, input.creator.agentId ?? null, input.creator.userId ?? null]);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw conflict(`A secret named "${input.name}" already exists in this company`, undefined, 'secret_name_conflict');
      throw error;
    }
    await this.writeVersion(db, row!, 1, input.value, input.externalRef ?? null, input.creator);
    return toMetadata(row!);
  }

  async rotate(db: Queryable, secret: Row, input: { value: string; externalRef?: string | null; creator: Creator }): Promise<SecretMetadata> {
    usableProvider(secret.provider);
    const externalRef = input.externalRef === undefined ? secret.external_ref : input.externalRef;
    // The row lock on the secret serialises concurrent rotations, so versions never collide.
    const row = await db.maybeOne(
      `update secrets set latest_version = latest_version + 1, external_ref = ?, updated_at = now() where id = ? returning *`,
      [externalRef, secret.id]);
    if (!row) throw notFound('Secret not found');
    await this.writeVersion(db, row, row.latest_version, input.value, externalRef, input.creator);
    return toMetadata(row);
  }

  private async writeVersion(db: Queryable, secret: Row, version: number, value: string, externalRef: string | null, creator: Creator): Promise<void> {
    const dataKey = await this.dataKeys.forCompany(db, secret.company_id);
    const sealed = seal(dataKey.key, Buffer.from(value, 'utf8'), versionAad(secret.company_id, secret.id, version));
    await db.query(
      `insert into secret_versions (secret_id, version, company_id, data_key_id, nonce, ciphertext, tag, external_ref, created_by_agent_id, created_by_user_id)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [secret.id, version, secret.company_id, dataKey.id, sealed.nonce, sealed.ciphertext, sealed.tag, externalRef, creator.agentId ?? null, creator.userId ?? null]);
  }

  /**
   * Decrypts one version of a secret. `latest` follows rotations; a number stays pinned.
   * A ciphertext that fails authentication raises vault_integrity_error and is logged.
   */
  /**
   * Decrypts several secrets of one company with a single query (a run environment names
   * many). Each request gets its own outcome, so the caller can say which one failed.
   */
  async revealMany(db: Queryable, companyId: string, requests: readonly RevealRequest[]): Promise<RevealOutcome[]> {
    if (requests.length === 0) return [];
    const rows = await db.query(
      `select w.ord, s.id, s.name, s.provider, s.latest_version, v.version, v.data_key_id, v.nonce, v.ciphertext, v.tag
         from jsonb_to_recordset(?::jsonb) as w(ord int, secret_id uuid, pinned int)
         left join secrets s on s.id = w.secret_id and s.company_id = ?
         left join secret_versions v on v.secret_id = s.id and v.version = coalesce(w.pinned, s.latest_version)`,
      // Arrays are passed as JSON: the driver would expand a JS array into a list of placeholders.
      [JSON.stringify(requests.map((r, index) => ({ ord: index + 1, secret_id: r.secretId, pinned: r.selector === 'latest' ? null : r.selector }))), companyId]);
    const byOrdinal = new Map(rows.map((row) => [Number(row.ord), row]));
    const outcomes: RevealOutcome[] = [];
    for (const [index, request] of requests.entries()) {
      const row = byOrdinal.get(index + 1);
      if (!row?.id) {
        outcomes.push({ ok: false, error: new KeelError(422, 'secret_not_found', `Secret ${request.secretId} does not exist in this company (it may have been deleted)`) });
        continue;
      }
      try {
        usableProvider(row.provider);
      } catch (error) {
        outcomes.push({ ok: false, error: error as KeelError });
        continue;
      }
      if (row.version === null || row.version === undefined) {
        outcomes.push({ ok: false, error: new KeelError(422, 'secret_version_not_found', `Secret "${row.name}" has no version ${request.selector === 'latest' ? row.latest_version : request.selector}`) });
        continue;
      }
      const version = Number(row.version);
      const dataKey = await this.dataKeys.byId(db, companyId, row.data_key_id);
      try {
        const plaintext = open(dataKey.key, { nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag }, versionAad(companyId, row.id, version));
        outcomes.push({ ok: true, value: plaintext.toString('utf8'), version });
      } catch {
        this.log.error({ secretId: row.id, version, companyId }, 'secret version failed authentication: stored ciphertext was altered');
        throw integrityError(`version ${version} of secret ${row.id} failed authentication`);
      }
    }
    return outcomes;
  }

  async reveal(db: Queryable, companyId: string, secretId: string, selector: 'latest' | number): Promise<{ value: string; version: number; secret: Row }> {
    const secret = await db.maybeOne('select * from secrets where id = ? and company_id = ?', [secretId, companyId]);
    if (!secret) throw new KeelError(422, 'secret_not_found', `Secret ${secretId} does not exist in this company (it may have been deleted)`);
    usableProvider(secret.provider);
    const version = selector === 'latest' ? secret.latest_version : selector;
    const row = await db.maybeOne('select * from secret_versions where secret_id = ? and version = ?', [secretId, version]);
    if (!row) throw new KeelError(422, 'secret_version_not_found', `Secret "${secret.name}" has no version ${version}`);
    const dataKey = await this.dataKeys.byId(db, companyId, row.data_key_id);
    try {
      const plaintext = open(dataKey.key, { nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag }, versionAad(companyId, secretId, version));
      return { value: plaintext.toString('utf8'), version, secret };
    } catch {
      this.log.error({ secretId, version, companyId }, 'secret version failed authentication: stored ciphertext was altered');
      throw integrityError(`version ${version} of secret ${secretId} failed authentication`);
    }
  }
}

export interface RevealRequest { secretId: string; selector: 'latest' | number }
export type RevealOutcome = { ok: true; value: string; version: number } | { ok: false; error: KeelError };

export function toMetadata(row: Row): SecretMetadata {
  return {
    id: row.id,
    companyId: row.company_id,
    name: row.name,
    provider: row.provider,
    externalRef: row.external_ref ?? null,
    latestVersion: Number(row.latest_version),
    description: row.description ?? null,
    createdByAgentId: row.created_by_agent_id ?? null,
    createdByUserId: row.created_by_user_id ?? null,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
  };
}
