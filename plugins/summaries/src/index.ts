import { definePlugin } from './plugin.gen.ts';
import { kernelEvents, workEvents } from '@keel/sdk/plugin';
import { generate } from './generate.ts';
import { getSlot, listRevisions } from './reads.ts';
import { getSummarizer } from './summarizer.ts';
import { onCompanyDeleted, onIssueUpdated } from './task-end.ts';
import { writeSummary } from './write.ts';

export default definePlugin({
  routes: {
    'get-slot': getSlot,
    'list-revisions': listRevisions,
    generate,
    'write-summary': writeSummary,
    'get-summarizer': getSummarizer,
  },
  events: {
    [workEvents.issueUpdated.name]: onIssueUpdated,
    [kernelEvents.companyDeleted.name]: onCompanyDeleted,
  },
});
