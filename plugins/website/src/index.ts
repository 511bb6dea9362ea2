import { definePlugin } from '@keel/sdk/plugin';
import { WEBSITE_CAPABILITIES } from './context.ts';
import { catalogPage, connectorPage } from './connectors.ts';
import { llmsText } from './llms.ts';
import { joinWaitlist } from './waitlist.ts';

export default definePlugin({
  capabilities: WEBSITE_CAPABILITIES,
  routes: {
    llms: llmsText,
    connectors: catalogPage,
    connector: connectorPage,
    'join-waitlist': joinWaitlist,
  },
});
