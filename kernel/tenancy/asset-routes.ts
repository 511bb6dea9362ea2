import type { RouteModule } from '../http/app.ts';
import { notFound } from '../http/errors.ts';
import { assertCompanyAccess } from '../http/guards.ts';
import { uuidParam } from '../http/request.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { cleanFilename } from '../blobs/file-names.ts';
import { findAsset, insertAsset, LOGO_CONTENT_TYPES, readAssetStream, SVG_TYPE, toUploadedAsset } from './assets.ts';
import { companyForRequest } from './company-access.ts';
import { prepareLogo, readSingleFile } from './logo-upload.ts';

/** Rendered SVG may not run script, load anything or reach the page that embeds it. */
const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/** The multipart part holding the logo. */
const LOGO_FIELD = 'file';

export const assetRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Assets');

  // Stores a logo image for the company; attaching it is a separate PATCH (logoAssetId).
  route({
    method: 'POST', path: '/api/companies/:companyId/logo', auth: 'any', success: 201, errors: [400, 413, 415, 422],
    summary: 'Upload a logo image for the company (attach it with PATCH logoAssetId)',
    rawBody: {
      contentType: 'multipart/form-data',
      description: `One file part named \`${LOGO_FIELD}\` (${LOGO_CONTENT_TYPES.join(', ')}), within the attachment size limit; SVG is sanitised.`,
      schema: { type: 'object', required: [LOGO_FIELD], properties: { [LOGO_FIELD]: { type: 'string', contentMediaType: 'application/octet-stream' } } },
    },
  }, async (ctx) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const file = await readSingleFile(ctx, LOGO_FIELD, kernel.config.limits.attachmentBytes);
    const logo = await prepareLogo(file);
    const row = await kernel.db.transaction(async (tx) => {
      // The company may have been deleted while the upload streamed in.
      if (!(await tx.maybeOne('select id from companies where id = ? for share', [company.id]))) throw notFound('Company not found');
      const asset = await insertAsset(tx, {
        companyId: company.id,
        kind: 'logo',
        contentType: logo.contentType,
        data: logo.data,
        originalFilename: cleanFilename(file.filename),
        createdByUserId: actor.kind === 'board' ? actor.userId : null,
        createdByAgentId: actor.kind === 'agent' ? actor.agentId : null,
      });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: company.id, action: 'asset.created', entityType: 'asset', entityId: asset.id,
        details: { kind: 'logo', contentType: logo.contentType, byteSize: logo.data.length, originalFilename: asset.original_filename ?? null, sanitized: logo.sanitized },
      });
      return asset;
    });
    ctx.status = 201;
    ctx.body = toUploadedAsset(row);
  });

  route({
    method: 'GET', path: '/api/assets/:assetId/content', auth: 'any', success: [200, 304], contentType: 'image/*',
    summary: "An asset's bytes (with a strong ETag; 304 when If-None-Match names it)",
  }, async (ctx) => {
    const assetId = uuidParam(ctx, 'assetId', 'Asset');
    const asset = await findAsset(kernel.db, assetId);
    if (!asset) throw notFound('Asset not found');
    assertCompanyAccess(ctx, asset.company_id);
    // An asset id always names the same bytes, so the hash is a strong validator.
    const etag = `"${asset.sha256}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, max-age=3600');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    if (asset.content_type === SVG_TYPE) ctx.set('Content-Security-Policy', SVG_CSP);
    if (ctx.get('if-none-match').split(',').map((tag) => tag.trim()).includes(etag)) {
      ctx.status = 304;
      return;
    }
    ctx.set('Content-Type', asset.content_type);
    ctx.body = readAssetStream(kernel.db, asset);
    // After the body: Koa drops the length when a stream replaces a body.
    ctx.length = Number(asset.byte_size);
  });
};
