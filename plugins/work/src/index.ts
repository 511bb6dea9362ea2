import { definePlugin } from './plugin.gen.ts';
import { costsEvents, kernelEvents } from '@keel/sdk/plugin';
import { onAgentStatusChanged } from './agent-termination.ts';
import { listArtifacts } from './artifacts.ts';
import { deleteAttachment, downloadAttachment, listAttachments, uploadAttachment } from './attachments.ts';
import { checkoutIssue, releaseIssue } from './checkout.ts';
import { createComment, listComments } from './comments.ts';
import { getDocument, listDocuments, listRevisions, putDocument } from './documents.ts';
import { voteFeedback, withdrawFeedback } from './feedback.ts';
import { listFeedbackTraces } from './feedback-list.ts';
import { createGoal, getGoal, listGoals, updateGoal } from './goals.ts';
import { createIssue, getIssue, updateIssue } from './issues.ts';
import { listIssues } from './issue-list.ts';
import { dailyIssues } from './issue-daily.ts';
import { issueActivity, issueRuns, runIssues } from './issue-history.ts';
import { inboxLite, inboxMine } from './inbox.ts';
import { getBoardInbox, markInboxAllRead, markInboxRead } from './board-inbox-routes.ts';
import { deliverFeedback } from './feedback-delivery.ts';
import { autoRecoverLiveness, livenessCompanies, previewLivenessRecovery, runLivenessRecovery } from './liveness.ts';
import { onCompanyDeleted } from './lifecycle.ts';
import { issueService } from './issue-service.ts';
import { managedProjectService } from './managed-projects.ts';
import { createHiddenTaskService, issueSnapshotService, taskService } from './task-services.ts';
import { issueSourceService } from './issue-source.ts';
import { onBudgetStop, projectService } from './project-holds.ts';
import { onRunClosed } from './run-end.ts';
import { exportCompany, importCompany } from './portability.ts';
import { createProject, getProject, listProjects, updateProject } from './projects.ts';
import { createProjectWorkspace, deleteProjectWorkspace, getProjectWorkspace, listProjectWorkspaces, projectWorkspacesService, updateProjectWorkspace } from './project-workspaces.ts';
import { createWorkProduct, listWorkProducts, updateWorkProduct } from './work-products.ts';

export default definePlugin({
  routes: {
    'create-project': createProject,
    'list-projects': listProjects,
    'get-project': getProject,
    'update-project': updateProject,
    'list-project-workspaces': listProjectWorkspaces,
    'create-project-workspace': createProjectWorkspace,
    'get-project-workspace': getProjectWorkspace,
    'update-project-workspace': updateProjectWorkspace,
    'delete-project-workspace': deleteProjectWorkspace,
    'create-goal': createGoal,
    'list-goals': listGoals,
    'get-goal': getGoal,
    'update-goal': updateGoal,
    'create-issue': createIssue,
    'list-issues': listIssues,
    'daily-issues': dailyIssues,
    'get-issue': getIssue,
    'update-issue': updateIssue,
    'checkout-issue': checkoutIssue,
    'release-issue': releaseIssue,
    'create-comment': createComment,
    'list-comments': listComments,
    'inbox-lite': inboxLite,
    'inbox-mine': inboxMine,
    'board-inbox': getBoardInbox,
    'board-inbox-read': markInboxRead,
    'board-inbox-read-all': markInboxAllRead,
    'issue-activity': issueActivity,
    'issue-runs': issueRuns,
    'run-issues': runIssues,
    'list-documents': listDocuments,
    'get-document': getDocument,
    'put-document': putDocument,
    'list-document-revisions': listRevisions,
    'upload-attachment': uploadAttachment,
    'list-attachments': listAttachments,
    'download-attachment': downloadAttachment,
    'delete-attachment': deleteAttachment,
    'create-work-product': createWorkProduct,
    'list-work-products': listWorkProducts,
    'update-work-product': updateWorkProduct,
    'list-artifacts': listArtifacts,
    'vote-feedback': voteFeedback,
    'withdraw-feedback': withdrawFeedback,
    'list-feedback-traces': listFeedbackTraces,
    'liveness-recovery-preview': previewLivenessRecovery,
    'liveness-recovery-run': runLivenessRecovery,
    // Not a route of its own: the selection of the two above (perCompany.select).
    'liveness-recovery-companies': livenessCompanies,
  },
  // Durable subscribers: each event arrives at least once, in order per company.
  events: {
    [kernelEvents.companyDeleted.name]: onCompanyDeleted,
    [kernelEvents.agentStatusChanged.name]: onAgentStatusChanged,
    [kernelEvents.runClosed.name]: onRunClosed,
    [costsEvents.budgetStopped.name]: onBudgetStop(true),
    [costsEvents.budgetResumed.name]: onBudgetStop(false),
  },
  services: {
    project: projectService,
    'project-workspaces': projectWorkspacesService,
    issue: issueService,
    'create-hidden-task': createHiddenTaskService,
    'managed-project': managedProjectService,
    task: taskService,
    'issue-snapshot': issueSnapshotService,
    'issue-source': issueSourceService,
    'export-company': exportCompany,
    'import-company': importCompany,
  },
  jobs: {
    'liveness-auto-recovery': autoRecoverLiveness,
    'deliver-feedback': deliverFeedback,
  },
});
