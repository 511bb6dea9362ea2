import { definePlugin } from '@keel/sdk/plugin';
import { onCommentAdded, onIssueAssigned } from './assignment-wakes.ts';
import { RUNTIME_CAPABILITIES } from './context.ts';
import { startRunsJob } from './dispatch.ts';
import { onExecutionFinished, onExecutionOutput } from './execution-events.ts';
import { heartbeatJob, heartbeatSweepJob, onAgentConfigChanged } from './heartbeats.ts';
import { cancelRunRoute, getRunRoute, listRunsRoute, runLogRoute, runStreamRoute } from './runs.ts';
import { resetSessionRoute, runtimeStateRoute, taskSessionsRoute } from './sessions.ts';
import { onAgentStatusChanged, onBudgetStopped, onCompanyStatusChanged } from './stopping.ts';
import { alphaLoginRoute, heartbeatInvokeRoute, wakeupRoute } from './wakeups.ts';

export default definePlugin({
  capabilities: RUNTIME_CAPABILITIES,
  routes: {
    wakeup: wakeupRoute,
    'heartbeat-invoke': heartbeatInvokeRoute,
    'alpha-login': alphaLoginRoute,
    'list-runs': listRunsRoute,
    'get-run': getRunRoute,
    'run-log': runLogRoute,
    'run-stream': runStreamRoute,
    'cancel-run': cancelRunRoute,
    'runtime-state': runtimeStateRoute,
    'reset-session': resetSessionRoute,
    'task-sessions': taskSessionsRoute,
  },
  jobs: {
    'start-runs': startRunsJob,
    heartbeat: heartbeatJob,
    'heartbeat-sweep': heartbeatSweepJob,
  },
  // Durable subscribers: each event arrives at least once, in order per entity (execution, agent, company).
  events: {
    'execution.output': onExecutionOutput,
    'execution.finished': onExecutionFinished,
    'agent.created': onAgentConfigChanged,
    'agent.updated': onAgentConfigChanged,
    'agent.status_changed': onAgentStatusChanged,
    'company.status_changed': onCompanyStatusChanged,
    'costs.budget.stopped': onBudgetStopped,
    'work.issue.assigned': onIssueAssigned,
    'work.issue.comment_added': onCommentAdded,
  },
});
