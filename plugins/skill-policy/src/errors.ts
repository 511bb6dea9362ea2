import { PluginError } from '@keel/sdk/plugin';
import type { Issues } from './issues.ts';

/** The policy's error answers: each carries its code, as the API documents them. */
export const ADMIN_REMEDIATION = 'Ask a company administrator to manage the skill policy.';

export function invalidDocument(issues: Issues): PluginError {
  return new PluginError(422, 'skill_policy_validation_failed', 'Invalid skill policy document', { issues: issues.list });
}

export function adminRequired(): PluginError {
  return new PluginError(403, 'skill_policy_admin_required', 'Skill policy administration authority required', { remediation: ADMIN_REMEDIATION });
}

export function revisionConflict(expectedRevision: number, currentRevision: number): PluginError {
  return new PluginError(409, 'skill_policy_revision_conflict', 'Skill policy revision is stale', { expectedRevision, currentRevision });
}

export function companyBoundaryDenied(): PluginError {
  return new PluginError(403, 'skill_company_boundary_denied', 'Agent key cannot access another company');
}

export function authenticationRequired(): PluginError {
  return new PluginError(401, 'skill_authentication_required', 'Authentication required');
}

export function agentNotFound(): PluginError {
  return new PluginError(404, 'agent_not_found', 'Agent not found');
}
