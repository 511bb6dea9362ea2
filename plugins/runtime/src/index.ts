import { definePlugin } from './plugin.gen.ts';
import { costsEvents, kernelEvents, workEvents } from '@keel/sdk/plugin';
import { jobWithActivity, withActivity } from './activity.ts';
import { onApprovalDecided, onBlockersResolved, onCommentAdded, onIssueAssigned } from './assignment-wakes.ts';
import { startRunsJob } from './dispatch.ts';
import { adapterReportService, onExecutionFinished, onExecutionOutput } from './execution-events.ts';
import { deleteFileRoute, getBundleRoute, getFileRoute, instructionsPathRoute, patchBundleRoute, putFileRoute } from './instructions.ts';
import { heartbeatJob, heartbeatSweepJob, onAgentConfigChanged } from './heartbeats.ts';
import { cancelRunRoute, getRunRoute, listRunsRoute, runLogRoute, runStreamRoute } from './runs.ts';
import { listRoutinesRoute, managedRoutineService, patchRoutineRoute, routineJob } from './routines.ts';
import { resetSessionRoute, runtimeStateRoute, taskSessionsRoute } from './sessions.ts';
import { onAgentStatusChanged, onBudgetStopped, onCompanyStatusChanged } from './stopping.ts';
import { heartbeatInvokeRoute, wakeupRoute } from './wakeups.ts';
import { adapterTestRoute, alphaLoginRoute } from './adapter-tools.ts';
import { runTranscriptRoute } from './transcript.ts';
import { dailyRunsRoute } from './daily-runs.ts';
import { runContextService } from './run-context.ts';
import { runOutcomesService } from './run-outcomes.ts';

export default definePlugin({
  routes: {
    wakeup: withActivity(wakeupRoute),
    'heartbeat-invoke': withActivity(heartbeatInvokeRoute),
    'alpha-login': withActivity(alphaLoginRoute),
    'adapter-test': withActivity(adapterTestRoute),
    'list-runs': withActivity(listRunsRoute),
    'daily-runs': withActivity(dailyRunsRoute),
    'get-run': withActivity(getRunRoute),
    'run-log': withActivity(runLogRoute),
    'run-transcript': withActivity(runTranscriptRoute),
    'run-stream': withActivity(runStreamRoute),
    'cancel-run': withActivity(cancelRunRoute),
    'runtime-state': withActivity(runtimeStateRoute),
    'reset-session': withActivity(resetSessionRoute),
    'task-sessions': withActivity(taskSessionsRoute),
    'instructions-path': withActivity(instructionsPathRoute),
    'instructions-bundle': withActivity(getBundleRoute),
    'instructions-bundle-update': withActivity(patchBundleRoute),
    'instructions-file': withActivity(getFileRoute),
    'instructions-file-put': withActivity(putFileRoute),
    'instructions-file-delete': withActivity(deleteFileRoute),
    'list-routines': withActivity(listRoutinesRoute),
    'patch-routine': withActivity(patchRoutineRoute),
  },
  services: {
    'adapter-report': withActivity(adapterReportService),
    'managed-routine': withActivity(managedRoutineService),
    'run-context': runContextService,
    'run-outcomes': runOutcomesService,
  },
  jobs: {
    'start-runs': jobWithActivity(startRunsJob),
    heartbeat: jobWithActivity(heartbeatJob),
    'heartbeat-sweep': jobWithActivity(heartbeatSweepJob),
    routine: jobWithActivity(routineJob),
  },
  // Durable subscribers: each event arrives at least once, in order per entity (execution, agent, company).
  events: {
    [kernelEvents.executionOutput.name]: withActivity(onExecutionOutput),
    [kernelEvents.executionFinished.name]: withActivity(onExecutionFinished),
    [kernelEvents.agentCreated.name]: withActivity(onAgentConfigChanged),
    [kernelEvents.agentUpdated.name]: withActivity(onAgentConfigChanged),
    // A stop cancels the agent's runs; any change arms or removes its heartbeat timer (heartbeats.ts).
    [kernelEvents.agentStatusChanged.name]: withActivity(async (payload, ctx) => {
      await onAgentStatusChanged(payload, ctx);
      await onAgentConfigChanged(payload, ctx);
    }),
    [kernelEvents.companyStatusChanged.name]: withActivity(onCompanyStatusChanged),
    [costsEvents.budgetStopped.name]: withActivity(onBudgetStopped),
    [workEvents.issueAssigned.name]: withActivity(onIssueAssigned),
    [workEvents.issueCommentAdded.name]: withActivity(onCommentAdded),
    [workEvents.issueBlockersResolved.name]: withActivity(onBlockersResolved),
    [kernelEvents.approvalDecided.name]: withActivity(onApprovalDecided),
  },
});
