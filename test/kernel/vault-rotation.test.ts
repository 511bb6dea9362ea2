import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYRING_FILE } from '../../kernel/vault/keyring.ts';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

const run = promisify(execFile);
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('master key rotation', () => {
  it('re-wraps every data key while the server keeps serving, values untouched', async () => {
    const companies = await Promise.all([1, 2, 3].map(() => createCompany(t.api)));
    const secrets = [];
    for (const [index, company] of companies.entries()) {
      const res = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'KEY', value: `value-${index}` });
      expect(res.status).toBe(201);
      secrets.push(res.body);
    }
    const keyFile = join(t.dataDir, KEYRING_FILE);
    const before = JSON.parse(await readFile(keyFile, 'utf8'));
    const versionsBefore = (await t.sql.query('select secret_id, ciphertext from secret_versions order by secret_id')).rows;

    // Keep the server busy with writes during the rotation.
    let stop = false;
    const traffic = (async () => {
      let n = 0;
      while (!stop) {
        const company = await createCompany(t.api);
        const res = await t.api.post(`/api/companies/${company.id}/secrets`, { name: `DURING_${n++}`, value: 'during-rotation' });
        expect(res.status).toBe(201);
      }
      return n;
    })();
    const { stdout } = await run(process.execPath, ['--no-node-snapshot', 'kernel/tools/vault-rotate-master-key.ts', '--data-dir', t.dataDir, '--grace-seconds', '5'], {
      env: { ...process.env, DATABASE_URL: t.databaseUrl },
    });
    stop = true;
    const during = await traffic;
    expect(during).toBeGreaterThan(0);
    expect(stdout).toMatch(/re-wrapped \d+ data keys under [0-9a-f]{16}; 0 left/);

    const after = JSON.parse(await readFile(keyFile, 'utf8'));
    expect(after.primary).not.toBe(before.primary);
    expect(after.keys.map((k: any) => k.id)).toEqual([after.primary]);
    const wrappedBy = (await t.sql.query('select distinct master_key_id from vault_data_keys')).rows.map((r: any) => r.master_key_id);
    expect(wrappedBy).toEqual([after.primary]);
    const versionsAfter = (await t.sql.query('select secret_id, ciphertext from secret_versions where secret_id = any($1) order by secret_id', [versionsBefore.map((v: any) => v.secret_id)])).rows;
    expect(versionsAfter).toEqual(versionsBefore);

    // A fresh unwrap (cache dropped) works with the new key only.
    const { vault, db } = t.kernel.services;
    for (const [index, company] of companies.entries()) {
      vault.dataKeys.forget(company.id);
      await expect(vault.reveal(db, company.id, secrets[index].id, 'latest')).resolves.toMatchObject({ value: `value-${index}` });
    }
  }, 60_000);
});
