import type { RouteModule } from '../http/app.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import { companyUploadLimit, MAX_COMPANY_UPLOAD_LIMIT_BYTES, setCompanyUploadLimit } from './upload-limits.ts';

const limitValidator = bodyValidator<{ maxBytes: number | null }>({
  type: 'object', additionalProperties: false, required: ['maxBytes'],
  properties: { maxBytes: {
    type: ['integer', 'null'], minimum: 1024, maximum: MAX_COMPANY_UPLOAD_LIMIT_BYTES,
    description: "The company's upload limit in bytes (1 KiB to 1 TiB); null returns to the instance's limits.attachmentBytes.",
  } },
});

/** A company's upload limit: readable by the company's members, set by instance admins. */
export const uploadLimitRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Blobs');
  const answer = async (companyId: string) => {
    const own = await companyUploadLimit(kernel.db, companyId);
    return { companyId, maxBytes: own, effectiveBytes: own ?? kernel.config.limits.attachmentBytes, instanceBytes: kernel.config.limits.attachmentBytes };
  };

  route({ method: 'GET', path: '/api/companies/:companyId/upload-limit', auth: 'any', success: 200, summary: "The company's upload limit (its own, or the instance's)" }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    ctx.body = await answer(company.id);
  });

  route({ method: 'PUT', path: '/api/companies/:companyId/upload-limit', auth: 'instance_admin', body: limitValidator, success: 200, summary: "Set the company's upload limit (null: the instance's)" }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const { maxBytes } = await req.body();
    await kernel.db.transaction(async (tx) => {
      await setCompanyUploadLimit(tx, company.id, maxBytes);
      await kernel.activity.recordFor(ctx, tx, { companyId: company.id, action: 'company.upload_limit_set', entityType: 'company', entityId: company.id, details: { maxBytes } });
    });
    ctx.body = await answer(company.id);
  });
};
