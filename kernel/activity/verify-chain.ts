import type { Queryable } from '../db/database.ts';

export interface ChainBreak {
  chain: string;
  seq: number;
  entryId: string | null;
  reason: 'hash_mismatch' | 'link_mismatch' | 'missing_entry' | 'head_mismatch';
}

export interface ChainReport {
  chains: number;
  entries: number;
  firstBreak: ChainBreak | null;
}

/**
 * Recomputes every entry's hash and checks each link to the previous entry of its chain,
 * reporting the first break in each chain order (company chains, then the instance chain).
 */
export async function verifyActivityChains(db: Queryable, companyId?: string): Promise<ChainReport> {
  const filter = companyId ? 'where company_id = ?' : '';
  const rows = await db.query<{ chain: string; seq: string; id: string; prev_hash: string; hash: string; computed: string; previous: string | null; previous_seq: string | null }>(
    `select coalesce(company_id::text, 'instance') as chain, seq, id, prev_hash, hash,
            keel_activity_hash(prev_hash, seq, company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, created_at) as computed,
            lag(hash) over w as previous, lag(seq) over w as previous_seq
       from activity_log ${filter}
     window w as (partition by coalesce(company_id::text, 'instance') order by seq)
     order by chain, seq`, companyId ? [companyId] : []);
  const heads = await db.query<{ chain_key: string; last_seq: string; last_hash: string }>(
    `select chain_key, last_seq, last_hash from activity_chain_heads ${companyId ? 'where chain_key = ?' : ''}`, companyId ? [companyId] : []);
  const chains = new Set(rows.map((r) => r.chain));
  let firstBreak: ChainBreak | null = null;
  const lastOf = new Map<string, { seq: number; hash: string }>();
  for (const row of rows) {
    const seq = Number(row.seq);
    const expectedPrevSeq = seq - 1;
    const breakHere = (reason: ChainBreak['reason']): ChainBreak => ({ chain: row.chain, seq, entryId: row.id, reason });
    let found: ChainBreak | null = null;
    if (row.previous_seq === null ? seq !== 1 : Number(row.previous_seq) !== expectedPrevSeq) found = breakHere('missing_entry');
    else if (row.previous === null ? row.prev_hash !== '0'.repeat(64) : row.prev_hash !== row.previous) found = breakHere('link_mismatch');
    else if (row.computed !== row.hash) found = breakHere('hash_mismatch');
    if (found && !firstBreak) firstBreak = found;
    lastOf.set(row.chain, { seq, hash: row.hash });
  }
  if (!firstBreak) {
    for (const head of heads) {
      const last = lastOf.get(head.chain_key);
      if (!last || last.seq !== Number(head.last_seq) || last.hash !== head.last_hash) {
        firstBreak = { chain: head.chain_key, seq: Number(head.last_seq), entryId: null, reason: last && last.seq < Number(head.last_seq) ? 'missing_entry' : 'head_mismatch' };
        break;
      }
    }
  }
  return { chains: chains.size, entries: rows.length, firstBreak };
}
