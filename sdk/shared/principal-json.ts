/**
 * The company and the agent as the API answers them, declared once: the kernel builds them
 * (kernel/tenancy/companies.ts, agents.ts), and the kernel events that carry them
 * (`company.created`, `agent.updated`, ...) hand plugins the same shape.
 */

/**
 * A company's decision on sharing its feedback traces beyond the instance, present on the
 * company only once a board user has made one: whether it consents, when and by whom that was
 * decided (stamped by the kernel), and the version of the sharing terms agreed to.
 */
export type FeedbackSharingConsent = {
  feedbackDataSharingEnabled: boolean;
  feedbackDataSharingConsentAt: string;
  feedbackDataSharingConsentByUserId: string;
  feedbackDataSharingTermsVersion: string | null;
};

export type Company = {
  id: string;
  name: string;
  description: string | null;
  status: 'active' | 'paused' | 'archived';
  /** Why the company is paused (the oldest of its holds: `manual` for the board's, `budget_hard_stop`, a plugin's reason); null unless paused. */
  pauseReason: string | null;
  pausedAt: string | null;
  issuePrefix: string;
  issueCounter: number;
  budgetMonthlyCents: number;
  spentMonthlyCents: number;
  requireBoardApprovalForNewAgents: boolean;
  brandColor: string | null;
  logoAssetId: string | null;
  logoUrl: string | null;
  createdAt: string;
  updatedAt: string;
} & Partial<FeedbackSharingConsent>;

/** The agent as the API shows it; the fields named here are always present, the others as the API documents them. */
export type AgentJson = Record<string, unknown> & {
  id: string;
  companyId: string;
  budgetMonthlyCents: number;
  /** The plugin and key of a managed agent (one a plugin made and keeps), else null. */
  managedBy: { plugin: string; key: string } | null;
};
