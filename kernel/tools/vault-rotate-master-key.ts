import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../config/load.ts';
import { createLogger } from '../logger.ts';
import { DataKeys } from '../vault/data-keys.ts';
import { Keyring, keyId, readKeyFile, writeKeyFile } from '../vault/keyring.ts';
import { openToolDatabase } from './tool-database.ts';

/**
 * Rotates the vault master key while kernels keep serving:
 *   1. a new key becomes primary in the key file, the old one stays readable;
 *   2. running kernels pick the new primary up within a few seconds (they re-read the file);
 *   3. every data key is re-wrapped under the new key, in small transactions, until none is left;
 *   4. after a grace period and a final sweep, the old key is removed from the file.
 * Values are never decrypted or rewritten. With KEEL_SECRETS_MASTER_KEY (keys from the
 * environment) the operator starts kernels with the new key in KEEL_SECRETS_MASTER_KEY and
 * the old one in KEEL_SECRETS_PREVIOUS_MASTER_KEYS, runs this command to re-wrap, then drops
 * the previous key from the environment.
 */
const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    'grace-seconds': { type: 'string', default: '12' },
  },
});
const dataDir = values['data-dir'] ?? defaultDataDir();
const graceMs = Number(values['grace-seconds']) * 1000;
const log = createLogger('warn');

const keyring = await Keyring.open(dataDir);
const { db, close } = await openToolDatabase(dataDir);
try {
  const file = keyring.filePath;
  let retired: string[] = [];
  if (file) {
    const current = await readKeyFile(file);
    const fresh = randomBytes(32);
    const id = keyId(fresh);
    retired = current.keys.map((k) => k.id);
    await writeKeyFile(file, { primary: id, keys: [{ id, key: fresh.toString('base64'), createdAt: new Date().toISOString() }, ...current.keys] });
    await keyring.reload(false);
    console.log(`new primary master key ${id}; previous keys stay readable until the re-wrap finishes`);
  }
  const dataKeys = new DataKeys(keyring);
  const sweep = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const moved = await db.transaction(async (tx) => {
        const rows = await tx.query('select * from vault_data_keys where master_key_id <> ? order by id limit 100 for update skip locked', [keyring.primary.id]);
        for (const row of rows) await dataKeys.rewrap(tx, row);
        return rows.length;
      });
      total += moved;
      if (moved === 0) return total;
    }
  };
  let rewrapped = await sweep();
  if (file) {
    // Kernels that had not yet re-read the key file may still wrap new data keys under the old
    // primary: wait until they have, then sweep again before the old key goes away.
    await new Promise((resolve) => setTimeout(resolve, graceMs));
    rewrapped += await sweep();
    const current = await readKeyFile(file);
    await writeKeyFile(file, { primary: current.primary, keys: current.keys.filter((k) => !retired.includes(k.id)) });
    rewrapped += await sweep();
  }
  const left = await db.maybeOne<{ n: string }>('select count(*) as n from vault_data_keys where master_key_id <> ?', [keyring.primary.id]);
  console.log(`re-wrapped ${rewrapped} data keys under ${keyring.primary.id}; ${left?.n ?? 0} left under other keys`);
  if (Number(left?.n ?? 0) > 0) process.exitCode = 1;
} catch (error) {
  log.error({ err: error }, 'master key rotation failed');
  console.error(`master key rotation failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await close();
}
