import type { Context } from 'koa';
import { activityActor, type Actor, type BoardActor } from '../auth/actor.ts';
import type { Queryable } from '../db/database.ts';
import type { EventActor } from '../events/event-bus.ts';
import { notFound, unprocessable } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import { deleteAsset } from './assets.ts';
import { COMPANY_COLUMNS, lockCompany, toCompany, updateCompanyColumns, type Assignment, type Company, type CompanyField, type CompanyStatus } from './companies.ts';
import { applyStatusSideEffects, statusColumns, syncBoardCompanyHolds, type StatusSideEffects } from './company-lifecycle.ts';

export type CompanyPatch = Partial<{
  name: string;
  description: string | null;
  budgetMonthlyCents: number;
  status: CompanyStatus;
  brandColor: string | null;
  logoAssetId: string | null;
  requireBoardApprovalForNewAgents: boolean;
  feedbackDataSharingEnabled: boolean;
  feedbackDataSharingTermsVersion: string;
}>;

/** What a CEO agent, and the branding route, may change. */
export const BRANDING_FIELDS = ['name', 'description', 'brandColor', 'logoAssetId'] as const;

/**
 * Company fields that are not branding: the writable board-only ones and the read-only
 * ones. A request from an agent naming any of them is refused outright rather than
 * half-applied; names that are not company fields at all are ignored like anywhere else.
 */
export const NON_BRANDING_FIELDS = [
  'budgetMonthlyCents', 'status', 'requireBoardApprovalForNewAgents', 'feedbackDataSharingEnabled', 'feedbackDataSharingTermsVersion',
  'feedbackDataSharingConsentAt', 'feedbackDataSharingConsentByUserId',
  'id', 'pauseReason', 'pausedAt', 'issuePrefix', 'issueCounter', 'spentMonthlyCents', 'logoUrl', 'createdAt', 'updatedAt',
] as const;

export function eventActor(ctx: Context): EventActor {
  const { actorType, actorId } = activityActor(ctx.state.actor as Actor);
  return { actorType, actorId };
}

/**
 * A logo must be a logo upload of the same company: another company's asset would leak
 * across tenants, and a non-logo asset (an attachment, say) would be deleted when the logo
 * is later replaced. The row is locked so that it cannot vanish before the commit.
 */
async function assertLogoAsset(db: Queryable, companyId: string, assetId: string): Promise<void> {
  const asset = await db.maybeOne<{ company_id: string; kind: string }>('select company_id, kind from assets where id = ? for share', [assetId]);
  if (!asset) throw unprocessable('Logo asset not found', { logoAssetId: assetId }, 'logo_asset_not_found');
  if (asset.company_id !== companyId) throw unprocessable('Logo asset must belong to the same company', { logoAssetId: assetId }, 'logo_asset_company_mismatch');
  if (asset.kind !== 'logo') throw unprocessable('Asset is not a logo upload; upload it through POST /api/companies/{companyId}/logo', { logoAssetId: assetId }, 'logo_asset_kind_mismatch');
}

/**
 * A board user's decision on feedback sharing is stamped by the kernel: when, and by whom. Consent
 * names the version of the sharing terms agreed to (in the patch, or kept from an earlier one).
 * Only a board user reaches here with these fields: agents are refused them (NON_BRANDING_FIELDS).
 */
function consentStamp(ctx: Context, before: Company, changes: Record<string, unknown>): Record<string, Assignment> {
  const enabled = (changes.feedbackDataSharingEnabled ?? before.feedbackDataSharingEnabled) === true;
  const terms = changes.feedbackDataSharingTermsVersion ?? before.feedbackDataSharingTermsVersion ?? null;
  if (enabled && terms === null) {
    throw unprocessable('Consent to feedback sharing names the version of the sharing terms agreed to: send feedbackDataSharingTermsVersion', { field: 'feedbackDataSharingTermsVersion' }, 'feedback_terms_version_required');
  }
  if (changes.feedbackDataSharingEnabled === undefined && before.feedbackDataSharingEnabled === undefined) {
    throw unprocessable('feedbackDataSharingTermsVersion goes with a decision: send feedbackDataSharingEnabled too', { field: 'feedbackDataSharingEnabled' }, 'feedback_sharing_decision_required');
  }
  return { feedback_data_sharing_consent_at: { sql: 'now()' }, feedback_data_sharing_consent_by_user_id: { value: (ctx.state.actor as BoardActor).userId } };
}

/**
 * Applies a validated patch in one transaction: the company row is locked, only fields that
 * really change are written, a status change brings its side effects (archive pauses agents,
 * reactivation resumes them), a replaced or cleared logo takes the previous asset with it,
 * and the activity entry and kernel events commit with the change.
 */
export async function applyCompanyPatch(ctx: Context, kernel: KernelServices, companyId: string, patch: CompanyPatch, action: 'company.updated' | 'company.branding_updated'): Promise<Company> {
  return kernel.db.transaction(async (tx) => {
    const current = await lockCompany(tx, companyId);
    if (!current) throw notFound('Company not found');
    const before = toCompany(current);
    const changes: Record<string, unknown> = {};
    const previous: Record<string, unknown> = {};
    for (const field of Object.keys(COMPANY_COLUMNS) as CompanyField[]) {
      const value = patch[field];
      if (value === undefined || value === before[field]) continue;
      changes[field] = value;
      previous[field] = before[field];
    }
    if (typeof changes.logoAssetId === 'string') await assertLogoAsset(tx, companyId, changes.logoAssetId);

    const columns: Record<string, Assignment> = {};
    for (const [field, value] of Object.entries(changes)) {
      if (field !== 'status') columns[COMPANY_COLUMNS[field as CompanyField]] = { value };
    }
    if ('feedbackDataSharingEnabled' in changes || 'feedbackDataSharingTermsVersion' in changes) {
      Object.assign(columns, consentStamp(ctx, before, changes));
    }
    const actor = eventActor(ctx);
    let effects: StatusSideEffects = { pausedAgentIds: [], resumedAgentIds: [], liftedHolds: [] };
    if (changes.status !== undefined) {
      Object.assign(columns, statusColumns(before.status, changes.status as CompanyStatus));
      effects = await applyStatusSideEffects(kernel, tx, companyId, before.status, changes.status as CompanyStatus, actor);
    }
    const row = Object.keys(columns).length > 0 ? await updateCompanyColumns(tx, companyId, columns) : current;
    if (changes.status !== undefined) effects.liftedHolds = await syncBoardCompanyHolds(tx, companyId, before.status, changes.status as CompanyStatus);
    if ('logoAssetId' in changes && before.logoAssetId) await deleteAsset(tx, before.logoAssetId, companyId);

    const company = toCompany(row);
    const details: Record<string, unknown> = { changes, previous };
    if (effects.pausedAgentIds.length) details.pausedAgentIds = effects.pausedAgentIds;
    if (effects.resumedAgentIds.length) details.resumedAgentIds = effects.resumedAgentIds;
    if (effects.liftedHolds.length) details.liftedHolds = effects.liftedHolds;
    if ('logoAssetId' in changes && before.logoAssetId) details.removedLogoAssetId = before.logoAssetId;
    await kernel.activity.recordFor(ctx, tx, { companyId, action, entityType: 'company', entityId: companyId, details });
    if (Object.keys(changes).length > 0) {
      await kernel.events.emit(tx, 'company.updated', { companyId, company, changes, actor }, { awaited: true });
      if (changes.status !== undefined) {
        await kernel.events.emit(tx, 'company.status_changed', { companyId, from: before.status, to: company.status, reason: company.status === 'paused' ? row.pause_reason ?? null : null, actor });
      }
      if (changes.status === 'archived') await kernel.events.emit(tx, 'company.archived', { companyId, actor });
    }
    return company;
  });
}
