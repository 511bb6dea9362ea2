import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The master keys that wrap per-company data keys. They never enter the database: they come
 * from KEEL_SECRETS_MASTER_KEY (plus KEEL_SECRETS_PREVIOUS_MASTER_KEYS during a rotation) or
 * from `<dataDir>/secrets-master.keys`, a 0600 file created on first start. Each key is named
 * by its id, a fingerprint stored beside every wrapped data key, so that an older key stays
 * usable until every data key has been re-wrapped under the primary one.
 */
export interface MasterKey {
  id: string;
  key: Buffer;
}

interface KeyFile {
  primary: string;
  keys: Array<{ id: string; key: string; createdAt: string }>;
}

export const KEYRING_FILE = 'secrets-master.keys';

export function keyId(key: Buffer): string {
  return createHash('sha256').update('keel-master-key:').update(key).digest('hex').slice(0, 16);
}

export function parseKeyMaterial(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const candidates = [/^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : null, Buffer.from(trimmed, 'base64')];
  for (const candidate of candidates) if (candidate && candidate.length === 32) return candidate;
  throw new Error(`${source} must be 32 bytes, given as 64 hex characters or base64`);
}

export class Keyring {
  private keys = new Map<string, Buffer>();
  private primaryId = '';
  private readonly file: string | null;
  private readonly fromEnv: boolean;

  private constructor(file: string | null, fromEnv: boolean) {
    this.file = file;
    this.fromEnv = fromEnv;
  }

  static async open(dataDir: string, env: NodeJS.ProcessEnv = process.env): Promise<Keyring> {
    if (env.KEEL_SECRETS_MASTER_KEY) {
      const ring = new Keyring(null, true);
      const primary = parseKeyMaterial(env.KEEL_SECRETS_MASTER_KEY, 'KEEL_SECRETS_MASTER_KEY');
      ring.add(primary, true);
      for (const [index, item] of (env.KEEL_SECRETS_PREVIOUS_MASTER_KEYS ?? '').split(',').filter(Boolean).entries()) {
        ring.add(parseKeyMaterial(item, `KEEL_SECRETS_PREVIOUS_MASTER_KEYS[${index}]`), false);
      }
      return ring;
    }
    const ring = new Keyring(join(dataDir, KEYRING_FILE), false);
    await ring.reload(true);
    return ring;
  }

  private add(key: Buffer, primary: boolean): void {
    const id = keyId(key);
    this.keys.set(id, key);
    if (primary) this.primaryId = id;
  }

  get primary(): MasterKey {
    return { id: this.primaryId, key: this.keys.get(this.primaryId)! };
  }

  get ids(): string[] {
    return [...this.keys.keys()];
  }

  /** A key by id; re-reads the key file once when the id is unknown (a rotation may have added it). */
  async get(id: string): Promise<Buffer | undefined> {
    const hit = this.keys.get(id);
    if (hit || this.fromEnv) return hit;
    await this.reload(false);
    return this.keys.get(id);
  }

  /** Re-reads the key file (rotation writes it); creates it with a fresh key on first start. */
  async reload(createIfMissing: boolean): Promise<void> {
    if (!this.file) return;
    let parsed: KeyFile;
    try {
      parsed = JSON.parse(await readFile(this.file, 'utf8')) as KeyFile;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !createIfMissing) throw error;
      const key = randomBytes(32);
      parsed = { primary: keyId(key), keys: [{ id: keyId(key), key: key.toString('base64'), createdAt: new Date().toISOString() }] };
      await writeKeyFile(this.file, parsed, 'wx');
    }
    const keys = new Map<string, Buffer>();
    for (const entry of parsed.keys) keys.set(entry.id, Buffer.from(entry.key, 'base64'));
    if (!keys.has(parsed.primary)) throw new Error(`${this.file}: primary key ${parsed.primary} is missing`);
    this.keys = keys;
    this.primaryId = parsed.primary;
  }

  /** Re-reads the key file every few seconds so a rotation's new primary is picked up while serving. */
  watch(intervalMs = 4000): () => void {
    if (!this.file) return () => undefined;
    const timer = setInterval(() => { void this.reload(false).catch(() => undefined); }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  get filePath(): string | null {
    return this.file;
  }
}

/** Written to a temporary file and renamed, so a reader never sees half a key file. */
export async function writeKeyFile(file: string, content: KeyFile, flag: 'w' | 'wx' = 'w'): Promise<void> {
  if (flag === 'wx') {
    await writeFile(file, JSON.stringify(content, null, 2), { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    return;
  }
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(content, null, 2), { mode: 0o600 });
  await rename(temp, file);
}

export async function readKeyFile(file: string): Promise<KeyFile> {
  return JSON.parse(await readFile(file, 'utf8')) as KeyFile;
}
