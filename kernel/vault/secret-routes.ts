import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import { KeelError, notFound } from '../http/errors.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { uuidParam } from '../http/request.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import { MAX_SECRET_VALUE_BYTES, toMetadata } from './vault.ts';

// Names are stored trimmed, so a name must hold something besides blanks (and no control characters).
const name = { type: 'string', minLength: 1, maxLength: 200, pattern: '^(?=.*\\S)[^\\u0000-\\u001f]+$' };
const value = { type: 'string', minLength: 1 };
const nullableText = (max: number) => ({ type: ['string', 'null'], maxLength: max });

const createSecret = bodyValidator<{ name: string; value: string; provider?: string; description?: string | null; externalRef?: string | null }>({
  type: 'object',
  required: ['name', 'value'],
  properties: { name, value, provider: { type: 'string', minLength: 1 }, description: nullableText(2000), externalRef: nullableText(2048) },
});
const patchSecret = bodyValidator<{ name?: string; description?: string | null; externalRef?: string | null; value?: unknown }>({
  type: 'object',
  properties: { name, description: nullableText(2000), externalRef: nullableText(2048) },
});
const rotateSecret = bodyValidator<{ value: string; externalRef?: string | null }>({
  type: 'object',
  required: ['value'],
  properties: { value, externalRef: nullableText(2048) },
});

function assertValueSize(text: string): void {
  if (text.trim().length === 0) throw new KeelError(400, 'validation_failed', 'Invalid request body: value must not be empty');
  if (Buffer.byteLength(text, 'utf8') > MAX_SECRET_VALUE_BYTES) {
    throw new KeelError(400, 'validation_failed', `Invalid request body: value must be at most ${MAX_SECRET_VALUE_BYTES} bytes`);
  }
}

/** The company-scoped secret of a board request (its route's guard admitted the board); 404 when it is unknown. */
async function secretForRequest(ctx: Context, kernel: KernelServices) {
  const secretId = uuidParam(ctx, 'secretId', 'Secret');
  const secret = await kernel.db.maybeOne('select * from secrets where id = ?', [secretId]);
  if (!secret) throw notFound('Secret not found');
  await companyForRequest(ctx, kernel.db, secret.company_id);
  return secret;
}

const creator = (ctx: Context) => ({ userId: (ctx.state.actor as { userId?: string }).userId ?? null });

/** The Secrets routes of the spec. No response or activity entry ever carries a value. */
export const secretRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Secrets');

  route({
    method: 'GET', path: '/api/companies/:companyId/secret-providers', auth: 'board', success: 200, response: LIST_RESPONSE,
    summary: 'Secret providers available to the company',
  }, async (ctx) => {
    await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    ctx.body = kernel.vault.providers().map((p) => ({ ...p }));
  });

  route({
    method: 'GET', path: '/api/companies/:companyId/secrets', auth: 'board', success: 200, response: LIST_RESPONSE,
    summary: "The company's secrets (metadata, never values)",
  }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const rows = await kernel.db.query('select * from secrets where company_id = ? order by created_at desc, id desc', [company.id]);
    ctx.body = rows.map(toMetadata);
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/secrets', auth: 'board', body: createSecret, success: 201, errors: [409, 422], parameters: [IDEMPOTENCY_KEY_PARAMETER],
    summary: 'Create a secret (version 1)',
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const body = await req.body();
    assertValueSize(body.value);
    // The value never reaches the idempotency record, not even hashed (a hash of a short value
    // can be guessed): a retry is recognised by the secret's name and metadata.
    const { value: _value, ...retried } = body;
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'secret', companyId: company.id, request: retried,
      load: async (id) => { const row = await tx.maybeOne('select * from secrets where id = ? and company_id = ?', [id, company.id]); return row ? toMetadata(row) : null; },
      create: async () => {
        const created = await kernel.vault.create(tx, {
          companyId: company.id, name: body.name.trim(), value: body.value, provider: body.provider,
          description: body.description ?? null, externalRef: body.externalRef ?? null, creator: creator(ctx),
        });
        await kernel.activity.recordFor(ctx, tx, {
          companyId: company.id, action: 'secret.created', entityType: 'secret', entityId: created.id,
          details: { name: created.name, provider: created.provider, version: 1 },
        });
        return { id: created.id, answer: created };
      },
    }));
  });

  route({
    method: 'PATCH', path: '/api/secrets/:secretId', auth: 'board', body: patchSecret, success: 200, errors: [409],
    summary: "Rename or describe a secret (never its value: 400 `secret_value_immutable`)",
  }, async (ctx, req) => {
    const secret = await secretForRequest(ctx, kernel);
    const body = await req.body();
    if (body.value !== undefined) {
      throw new KeelError(400, 'secret_value_immutable', 'PATCH never changes a secret value; use POST /api/secrets/{secretId}/rotate');
    }
    const updated = await kernel.db.transaction(async (tx) => {
      if (body.name !== undefined && body.name.trim() !== secret.name) {
        const clash = await tx.maybeOne('select id from secrets where company_id = ? and name = ? and id <> ?', [secret.company_id, body.name.trim(), secret.id]);
        if (clash) throw new KeelError(409, 'secret_name_conflict', `A secret named "${body.name.trim()}" already exists in this company`);
      }
      const row = await tx.maybeOne(
        `update secrets set name = coalesce(?, name),
           description = case when ? then ? else description end,
           external_ref = case when ? then ? else external_ref end,
           updated_at = now() where id = ? returning *`,
        [body.name?.trim() ?? null, body.description !== undefined, body.description ?? null, body.externalRef !== undefined, body.externalRef ?? null, secret.id]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId: secret.company_id, action: 'secret.updated', entityType: 'secret', entityId: secret.id,
        details: { changed: Object.keys(body).filter((k) => k !== 'value') },
      });
      return toMetadata(row!);
    });
    ctx.body = updated;
  });

  route({ method: 'POST', path: '/api/secrets/:secretId/rotate', auth: 'board', body: rotateSecret, success: 200, errors: [422], summary: 'Store a new version of a secret' }, async (ctx, req) => {
    const secret = await secretForRequest(ctx, kernel);
    const body = await req.body();
    assertValueSize(body.value);
    const rotated = await kernel.db.transaction(async (tx) => {
      const result = await kernel.vault.rotate(tx, secret, { value: body.value, externalRef: body.externalRef, creator: creator(ctx) });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: secret.company_id, action: 'secret.rotated', entityType: 'secret', entityId: secret.id,
        details: { name: result.name, version: result.latestVersion },
      });
      return result;
    });
    ctx.body = rotated;
  });

  route({ method: 'DELETE', path: '/api/secrets/:secretId', auth: 'board', success: 200, summary: 'Delete a secret and all its versions' }, async (ctx) => {
    const secret = await secretForRequest(ctx, kernel);
    await kernel.db.transaction(async (tx) => {
      await tx.exec('delete from secrets where id = ?', [secret.id]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId: secret.company_id, action: 'secret.deleted', entityType: 'secret', entityId: secret.id,
        details: { name: secret.name, versions: Number(secret.latest_version) },
      });
    });
    ctx.body = { ok: true, id: secret.id };
  });
};
