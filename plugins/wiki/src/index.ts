import { definePlugin } from './plugin.gen.ts';
import { kernelEvents, workEvents } from '@keel/sdk/plugin';
import { wikiAdvanceCursor, wikiNextCursorWindow } from './cursor.ts';
import { wikiAppendLog, wikiUpdateIndex } from './index-log.ts';
import { onIssueEvent } from './ingest-events.ts';
import { getIngestion, putIngestion } from './ingestion.ts';
import { wikiListBacklinks, wikiListPages, wikiProposePatch, wikiReadPage, wikiSearch, wikiWritePage } from './pages.ts';
import { fileAsPage, startQuery } from './queries.ts';
import { wikiListSources, wikiReadSource } from './sources.ts';
import { archiveSpace, bootstrapRoute, bootstrapSpaceRoute, captureSourceRoute, createSpace, operationsRoute, overviewRoute, spacesRoute, updateSpace } from './spaces.ts';
import { onAgentCreated } from './managed.ts';
import { onFolderChanged } from './watch.ts';
import { wikiConsolePage } from './console-page.ts';

export default definePlugin({
  routes: {
    overview: overviewRoute,
    bootstrap: bootstrapRoute,
    'capture-source': captureSourceRoute,
    spaces: spacesRoute,
    'create-space': createSpace,
    'update-space': updateSpace,
    'bootstrap-space': bootstrapSpaceRoute,
    'archive-space': archiveSpace,
    operations: operationsRoute,
    'start-query': startQuery,
    'file-as-page': fileAsPage,
    ingestion: getIngestion,
    'set-ingestion': putIngestion,
  },
  tools: {
    wiki_search: wikiSearch,
    wiki_list_pages: wikiListPages,
    wiki_read_page: wikiReadPage,
    wiki_write_page: wikiWritePage,
    wiki_propose_patch: wikiProposePatch,
    wiki_list_sources: wikiListSources,
    wiki_read_source: wikiReadSource,
    wiki_list_backlinks: wikiListBacklinks,
    wiki_update_index: wikiUpdateIndex,
    wiki_append_log: wikiAppendLog,
    wiki_next_cursor_window: wikiNextCursorWindow,
    wiki_advance_cursor: wikiAdvanceCursor,
  },
  events: {
    [workEvents.issueCreated.name]: onIssueEvent,
    [workEvents.issueUpdated.name]: onIssueEvent,
    [workEvents.issueCommentAdded.name]: onIssueEvent,
    [workEvents.issueDocumentUpdated.name]: onIssueEvent,
    [kernelEvents.agentCreated.name]: onAgentCreated,
  },
  // The console's Wiki page (ui.pages key `wiki`) is this handler's answer.
  data: {
    wiki: wikiConsolePage,
  },
  jobs: {
    'folder-changed': onFolderChanged,
  },
});
