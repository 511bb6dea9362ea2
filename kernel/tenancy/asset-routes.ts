import type { RouteModule } from '../http/app.ts';
import { notFound } from '../http/errors.ts';
import { assertCompanyAccess, requireActor } from '../http/guards.ts';
import { uuidParam } from '../http/request.ts';
import { findAsset, insertAsset, readAssetData, SVG_TYPE, cleanFilename, toUploadedAsset } from './assets.ts';
import { companyForRequest } from './company-access.ts';
import { prepareLogo, readSingleFile } from './logo-upload.ts';

/** Rendered SVG may not run script, load anything or reach the page that embeds it. */
const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

export const assetRoutes: RouteModule = (router, kernel) => {
  // Stores a logo image for the company; attaching it is a separate PATCH (logoAssetId).
  router.post('/api/companies/:companyId/logo', async (ctx) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const file = await readSingleFile(ctx, 'file', kernel.config.limits.attachmentBytes);
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

  router.get('/api/assets/:assetId/content', async (ctx) => {
    requireActor(ctx);
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
    const data = await readAssetData(kernel.db, assetId);
    if (!data) throw notFound('Asset not found');
    ctx.set('Content-Type', asset.content_type);
    ctx.body = data;
  });
};
