import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type pg from 'pg';
import { CAPABILITY_FOLDERS, capabilityFolders } from '../host/capabilities/folders.ts';

const DEFINED = /create\s+or\s+replace\s+function\s+keel_bridge\.([a-z_][a-z0-9_]*)\s*\(/gi;

export interface BridgeSource { source: string; sql: string; sha256: string; functions: string[] }

/** Every capability folder's bridge.sql, in folder order, with the keel_bridge functions it defines. */
export async function bridgeSources(): Promise<BridgeSource[]> {
  const sources: BridgeSource[] = [];
  // Each capability folder may hold a bridge.sql (kernel/host/README.md, "Adding a capability").
  for (const folder of capabilityFolders()) {
    const sql = await readFile(new URL(`${folder}/bridge.sql`, CAPABILITY_FOLDERS), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (sql === null) continue;
    const functions = [...new Set([...sql.matchAll(DEFINED)].map((match) => match[1]!.toLowerCase()))];
    if (functions.length === 0) throw new Error(`${folder}/bridge.sql defines no keel_bridge function (create or replace function keel_bridge.name(...))`);
    sources.push({ source: `${folder}/bridge.sql`, sql, sha256: createHash('sha256').update(sql).digest('hex'), functions });
  }
  return sources;
}

/**
 * Installs the capability folders' bridge functions whose text changed since it was last
 * installed, or whose functions something else (a migration) changed since (kernel_bridge_sources,
 * migration 0050): the folder's text is the one definition. Each file in a transaction of its own on
 * the migration runner's connection, which holds the migration lock: kernels starting at once
 * install a file once, and the others find it recorded. A file whose functions would not be
 * SECURITY DEFINER with a pinned search_path (ending in pg_temp), or would be executable by
 * PUBLIC, is rolled back and the start fails: these functions run as the kernel for plugin roles.
 */
export async function installBridgeFunctions(client: pg.PoolClient | pg.Client, sources?: BridgeSource[]): Promise<string[]> {
  const installed = new Map((await client.query<{ source: string; sha256: string; definitions_md5: string }>('select source, sha256, definitions_md5 from kernel_bridge_sources')).rows.map((row) => [row.source, row]));
  const changed: string[] = [];
  for (const source of sources ?? await bridgeSources()) {
    const recorded = installed.get(source.source);
    // The file is the one definition: run again when it changed, or when its functions no longer are what it made.
    if (recorded?.sha256 === source.sha256 && recorded.definitions_md5 === await definitionsMd5(client, source.functions)) continue;
    await client.query('begin');
    try {
      await client.query(source.sql);
      const unsafe = await client.query<{ signature: string }>(UNSAFE_FUNCTIONS, [source.functions]);
      if (unsafe.rows.length > 0) throw new Error(`${source.source}: ${unsafe.rows.map((row) => row.signature).join(', ')} must be SECURITY DEFINER, set search_path ending in pg_temp and revoke EXECUTE from PUBLIC`);
      await client.query(
        `insert into kernel_bridge_sources (source, sha256, definitions_md5) values ($1, $2, $3)
         on conflict (source) do update set sha256 = excluded.sha256, definitions_md5 = excluded.definitions_md5, installed_at = now()`,
        [source.source, source.sha256, await definitionsMd5(client, source.functions)]);
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      throw error;
    }
    changed.push(source.source);
  }
  return changed;
}

/** What the database holds for the named keel_bridge functions (every overload), as one digest. */
async function definitionsMd5(client: pg.PoolClient | pg.Client, functions: string[]): Promise<string> {
  const { rows } = await client.query<{ digest: string | null }>(
    `select md5(string_agg(pg_get_functiondef(p.oid), E'\\n' order by p.oid::regprocedure::text)) as digest
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'keel_bridge' and p.proname = any ($1::text[])`, [functions]);
  return rows[0]?.digest ?? 'none';
}

/** The functions of the given names in keel_bridge that are not as safe as a bridge function must be. */
const UNSAFE_FUNCTIONS = `
  select p.oid::regprocedure::text as signature
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where n.nspname = 'keel_bridge' and p.proname = any ($1::text[])
     and (not p.prosecdef
          or not exists (select 1 from unnest(coalesce(p.proconfig, '{}'::text[])) setting where setting ~ '^search_path=.*pg_temp$')
          or has_function_privilege('public', p.oid, 'execute'))
   order by 1`;
