import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { iso, type Row, type Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { BOARD_KEY_PREFIX, CHALLENGE_SECRET_PREFIX, displayPrefix, hashToken, mintToken, safeEqual } from './tokens.ts';

/**
 * Command-line auth challenges: a CLI without credentials creates a challenge, a board
 * user approves it, and the CLI collects a board API key by polling with the challenge
 * secret.
 *
 * The key is never stored, not even encrypted. At creation the server derives it as
 * `svc_board_` + HMAC-SHA256(key = challenge secret, id ":" nonce) and keeps only its hash
 * (to insert into board_api_keys on approval), a display prefix and the random nonce;
 * the secret itself is kept only as a hash. On the first poll with the secret after
 * approval the server derives the key again, hands it over and erases the nonce, so from
 * then on nobody (not even the holder of the secret) can derive it again. Neither a copy
 * of the database (no secret) nor the secret alone (no nonce) yields the key.
 */
export const CHALLENGE_TTL_MS = 10 * 60 * 1000;

export type ChallengeStatus = 'pending' | 'approved' | 'cancelled' | 'expired' | 'consumed';

export interface CreatedChallenge {
  id: string;
  secret: string;
  row: Row;
}

export function deriveBoardKey(secret: string, id: string, nonce: string): string {
  return BOARD_KEY_PREFIX + createHmac('sha256', secret).update(`${id}:${nonce}`).digest('base64url');
}

export async function createChallenge(tx: Tx, input: { clientName: string | null; keyName: string | null }): Promise<CreatedChallenge> {
  const id = randomUUID();
  const secret = mintToken(CHALLENGE_SECRET_PREFIX);
  const nonce = randomBytes(32).toString('base64url');
  const key = deriveBoardKey(secret, id, nonce);
  const row = await tx.maybeOne(
    `insert into cli_auth_challenges (id, secret_hash, client_name, requested_key_name, key_nonce, pending_key_hash, pending_key_prefix, expires_at)
     values (?, ?, ?, ?, ?, ?, ?, ?) returning *`,
    [id, hashToken(secret), input.clientName, input.keyName, nonce, hashToken(key), displayPrefix(key), new Date(Date.now() + CHALLENGE_TTL_MS)],
  );
  return { id, secret, row: row! };
}

export async function lockChallenge(tx: Tx, id: string): Promise<Row | undefined> {
  return tx.maybeOne('select * from cli_auth_challenges where id = ? for update', [id]);
}

/** Pending and approved challenges lapse at expiresAt even before the sweep has marked them. */
export function effectiveStatus(row: Row): ChallengeStatus {
  const status = row.status as ChallengeStatus;
  if ((status === 'pending' || status === 'approved') && new Date(row.expires_at).getTime() <= Date.now()) return 'expired';
  return status;
}

export function secretMatches(row: Row, secret: string): boolean {
  return safeEqual(hashToken(secret), row.secret_hash);
}

/**
 * Marks lapsed challenges expired and erases their nonces. A key approved but never
 * collected is revoked, since nobody can ever hold it legitimately. `id` limits the sweep
 * to one challenge.
 */
export async function expireLapsed(kernel: KernelServices, tx: Tx, id?: string): Promise<void> {
  const rows = await tx.query<{ id: string; board_api_key_id: string | null }>(
    `update cli_auth_challenges set status = 'expired', key_nonce = null
      where status in ('pending', 'approved') and expires_at <= now() ${id ? 'and id = ?' : ''}
      returning id, board_api_key_id`, id ? [id] : []);
  for (const row of rows) {
    if (!row.board_api_key_id) continue;
    const revoked = await tx.exec('update board_api_keys set revoked_at = now() where id = ? and revoked_at is null', [row.board_api_key_id]);
    if (!revoked) continue;
    await kernel.invalidate(tx, { type: 'credential_id', id: row.board_api_key_id });
    await kernel.activity.record(tx, {
      companyId: null, actorType: 'system', actorId: 'cli-auth', action: 'board_api_key.revoked', entityType: 'board_api_key',
      entityId: row.board_api_key_id, details: { reason: 'challenge_expired_before_collection', challengeId: row.id },
    });
  }
  // Long-finished challenges serve no one; keep the table small.
  await tx.exec(`delete from cli_auth_challenges where expires_at < now() - interval '7 days'`);
}

export interface ChallengeView {
  id: string;
  status: ChallengeStatus;
  clientName: string | null;
  keyName: string | null;
  expiresAt: string | null;
  createdAt: string | null;
  approvedAt: string | null;
  cancelledAt: string | null;
  consumedAt: string | null;
  pollPath: string;
  approvePath: string;
}

export function challengeView(row: Row): ChallengeView {
  return {
    id: row.id,
    status: effectiveStatus(row),
    clientName: row.client_name ?? null,
    keyName: row.requested_key_name ?? null,
    expiresAt: iso(row.expires_at),
    createdAt: iso(row.created_at),
    approvedAt: iso(row.approved_at),
    cancelledAt: iso(row.cancelled_at),
    consumedAt: iso(row.consumed_at),
    ...challengePaths(row.id),
  };
}

export function challengePaths(id: string): { pollPath: string; approvePath: string } {
  return { pollPath: `/api/cli-auth/challenges/${id}`, approvePath: `/api/cli-auth/challenges/${id}/approve` };
}
