import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import { badRequest, conflict, forbidden, KeelError, notFound, unauthorized } from '../http/errors.ts';
import { actorOf, requireActor } from '../http/guards.ts';
import { uuidParam } from '../http/request.ts';
import { declareRoutes, type ParameterDoc } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Row } from '../db/database.ts';
import type { BoardActor } from './actor.ts';
import {
  challengeView, createChallenge, deriveBoardKey, effectiveStatus, expireLapsed, lockChallenge, secretMatches,
} from './cli-auth.ts';
import { hashToken } from './tokens.ts';

/** The command-line auth challenge flow and the board-key routes a CLI uses afterwards. */
const createValidator = bodyValidator<{ clientName?: string | null; keyName?: string | null }>({
  type: 'object',
  properties: {
    clientName: { type: ['string', 'null'], maxLength: 200 },
    keyName: { type: ['string', 'null'], maxLength: 100 },
  },
});

const approveValidator = bodyValidator<{ keyName?: string | null }>({
  type: 'object',
  properties: { keyName: { type: ['string', 'null'], minLength: 1, maxLength: 100 } },
});

const cancelValidator = bodyValidator<{ secret?: string }>({
  type: 'object',
  properties: { secret: { type: 'string', maxLength: 200 } },
});

const CHALLENGE = 'Challenge';

/** Where challengeSecret() looks for the secret, for the reference. */
const SECRET_PARAMETERS: ParameterDoc[] = [
  { name: 'X-Challenge-Secret', in: 'header', description: "The challenge's secret, as its creation answered it.", schema: { type: 'string' } },
  { name: 'secret', in: 'query', description: 'The same secret, when a header cannot be sent; given once.', schema: { type: 'string' } },
];

export const cliAuthRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'CLI auth');

  route({
    method: 'POST', path: '/api/cli-auth/challenges', auth: 'none', body: createValidator, success: 201,
    summary: 'Start a command-line sign-in: a challenge and its secret (shown once)',
  }, async (ctx, req) => {
    const body = await req.body();
    const created = await kernel.db.transaction(async (tx) => {
      await expireLapsed(kernel, tx);
      const challenge = await createChallenge(tx, { clientName: body.clientName?.trim() || null, keyName: body.keyName?.trim() || null });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'cli_auth.challenge_created', entityType: 'cli_auth_challenge', entityId: challenge.id,
        details: { clientName: challenge.row.client_name },
      });
      return challenge;
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    // The secret is shown once: only its hash is stored.
    ctx.body = { ...challengeView(created.row), secret: created.secret };
  });

  route({
    method: 'GET', path: '/api/cli-auth/challenges/:id', auth: 'none', parameters: SECRET_PARAMETERS, success: 200, errors: [400, 403],
    summary: 'State of a challenge; with its secret, once approved, hands over the board API key once',
  }, async (ctx) => {
    const id = uuidParam(ctx, 'id', CHALLENGE);
    const secret = challengeSecret(ctx);
    const result = await kernel.db.transaction(async (tx) => {
      let row = await lockChallenge(tx, id);
      if (!row) throw notFound('Challenge not found');
      if (secret !== undefined && !secretMatches(row, secret)) throw forbidden('Invalid challenge secret', 'invalid_challenge_secret');
      if (effectiveStatus(row) !== row.status) {
        await expireLapsed(kernel, tx, id);
        row = (await lockChallenge(tx, id))!;
      }
      if (secret === undefined || row.status !== 'approved') return { row, extra: secret === undefined ? {} : owner(row) };
      // The one hand-over of the key: derive it again from the secret, then forget the nonce.
      const token = deriveBoardKey(secret, id, row.key_nonce);
      if (hashToken(token) !== row.pending_key_hash) throw new KeelError(500, 'internal_error', 'Challenge key does not match', { expose: false });
      row = (await tx.maybeOne(
        `update cli_auth_challenges set status = 'consumed', consumed_at = now(), key_nonce = null where id = ? returning *`, [id]))!;
      await kernel.activity.record(tx, {
        companyId: null, actorType: 'system', actorId: 'cli-auth', action: 'cli_auth.challenge_consumed', entityType: 'cli_auth_challenge',
        entityId: id, runId: actorOf(ctx).runId, details: { keyId: row.board_api_key_id },
      });
      return { row, extra: { ...owner(row), keyId: row.board_api_key_id, token } };
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...challengeView(result.row), ...result.extra };
  });

  route({
    method: 'POST', path: '/api/cli-auth/challenges/:id/approve', auth: 'board', body: approveValidator, success: 200, errors: [409],
    summary: 'Approve a challenge from a browser session or as the local board (not with a board API key)',
  }, async (ctx, req) => {
    const actor = req.actor;
    if (actor.source === 'board_key') {
      throw forbidden('CLI challenges are approved from a browser session or by the local board, not with a board API key', 'browser_approval_required');
    }
    const id = uuidParam(ctx, 'id', CHALLENGE);
    const body = await req.body();
    const result = await kernel.db.transaction(async (tx) => {
      const row = await lockChallenge(tx, id);
      if (!row) throw notFound('Challenge not found');
      assertPending(row);
      const keyName = body.keyName?.trim() || row.requested_key_name || row.client_name || 'CLI';
      const key = await tx.maybeOne<{ id: string }>(
        'insert into board_api_keys (user_id, name, key_hash, key_prefix) values (?, ?, ?, ?) returning id',
        [keyOwner(actor), keyName, row.pending_key_hash, row.pending_key_prefix]);
      const updated = await tx.maybeOne(
        `update cli_auth_challenges set status = 'approved', approved_at = now(), approved_by_user_id = ?, board_api_key_id = ?
          where id = ? returning *`, [actor.userId, key!.id, id]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'cli_auth.challenge_approved', entityType: 'cli_auth_challenge', entityId: id,
        details: { keyId: key!.id, keyName, clientName: row.client_name },
      });
      return { row: updated!, keyId: key!.id };
    });
    ctx.body = { ...challengeView(result.row), approved: true, keyId: result.keyId, userId: actor.userId };
  });

  route({
    method: 'POST', path: '/api/cli-auth/challenges/:id/cancel', auth: 'challenge_secret', body: cancelValidator, parameters: SECRET_PARAMETERS,
    success: 200, errors: [409], summary: 'Cancel a pending challenge (with its secret, or as a board user)',
  }, async (ctx, req) => {
    const id = uuidParam(ctx, 'id', CHALLENGE);
    const body = await req.body();
    const secret = challengeSecret(ctx) ?? body.secret;
    const actor = actorOf(ctx);
    if (secret === undefined) {
      if (actor.kind === 'anonymous') throw unauthorized('Cancelling a challenge needs its secret or a board sign-in');
      if (actor.kind !== 'board') throw forbidden('Cancelling a challenge needs its secret or board access', 'board_required');
    }
    const result = await kernel.db.transaction(async (tx) => {
      const row = await lockChallenge(tx, id);
      if (!row) throw notFound('Challenge not found');
      if (secret !== undefined && !secretMatches(row, secret)) throw forbidden('Invalid challenge secret', 'invalid_challenge_secret');
      if (row.status === 'cancelled') return { row, changed: false };
      assertPending(row);
      const updated = await tx.maybeOne(
        `update cli_auth_challenges set status = 'cancelled', cancelled_at = now(), key_nonce = null where id = ? returning *`, [id]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'cli_auth.challenge_cancelled', entityType: 'cli_auth_challenge', entityId: id,
        details: { by: secret !== undefined ? 'challenge_secret' : 'board' },
      });
      return { row: updated!, changed: true };
    });
    // Cancelling twice changes nothing the second time.
    if (!result.changed) ctx.state.skipAudit = true;
    ctx.body = { ...challengeView(result.row), cancelled: true };
  });

  route({
    method: 'GET', path: '/api/cli-auth/me', auth: 'board', success: 200,
    summary: 'The board user behind the credential, with the companies it reaches',
  }, async (ctx, req) => {
    const actor = req.actor;
    let user: { id: string; email: string | null; name: string | null };
    let companyIds: readonly string[] = actor.companyIds;
    if (actor.isLocalBoard) {
      user = { id: actor.userId, email: null, name: 'Local board' };
      // The local board reaches every company.
      companyIds = (await kernel.db.query<{ id: string }>('select id from companies order by created_at, id')).map((r) => r.id);
    } else {
      const row = await kernel.db.maybeOne('select id, email, name from users where id = ?', [actor.userId]);
      if (!row) throw unauthorized();
      user = { id: row.id, email: row.email, name: row.name ?? null };
    }
    ctx.body = {
      user, userId: user.id, companyIds, isInstanceAdmin: actor.isInstanceAdmin || actor.isLocalBoard, source: actor.source,
      ...(actor.keyId ? { keyId: actor.keyId } : {}),
    };
  });

  route({
    method: 'POST', path: '/api/cli-auth/revoke-current', auth: 'board_key', success: 200, errors: [400],
    summary: 'Revoke the board API key the request is authenticated with',
  }, async (ctx) => {
    const actor = requireActor(ctx);
    if (actor.kind !== 'board') throw forbidden('Only a board API key can be revoked through this route', 'board_required');
    if (actor.source !== 'board_key' || !actor.keyId) {
      throw badRequest('This request is not authenticated with a board API key; send the key to revoke as the bearer token');
    }
    const keyId = actor.keyId;
    await kernel.db.transaction(async (tx) => {
      const revoked = await tx.exec('update board_api_keys set revoked_at = now() where id = ? and revoked_at is null', [keyId]);
      if (!revoked) throw unauthorized();
      await kernel.invalidate(tx, { type: 'credential_id', id: keyId });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'board_api_key.revoked', entityType: 'board_api_key', entityId: keyId, details: { reason: 'revoke_current' },
      });
    });
    ctx.body = { revoked: true, keyId };
  });
};

function challengeSecret(ctx: Context): string | undefined {
  const header = ctx.get('x-challenge-secret');
  if (header) return header;
  const query = ctx.query.secret;
  if (typeof query === 'string' && query) return query;
  if (Array.isArray(query)) throw badRequest('Give the challenge secret once');
  return undefined;
}

function assertPending(row: Row): void {
  const status = effectiveStatus(row);
  if (status === 'pending') return;
  if (status === 'expired') throw conflict('Challenge has expired', undefined, 'challenge_expired');
  if (status === 'cancelled') throw conflict('Challenge was cancelled', undefined, 'challenge_cancelled');
  throw conflict('Challenge was already approved', undefined, 'challenge_already_approved');
}

/** Keys approved by the implicit local board carry no user and inherit its full local trust. */
function keyOwner(actor: BoardActor): string | null {
  return actor.isLocalBoard ? null : actor.userId;
}

function owner(row: Row): { approvedByUserId: string | null } {
  return { approvedByUserId: row.approved_by_user_id ?? null };
}
