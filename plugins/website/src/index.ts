import { definePlugin } from './plugin.gen.ts';
import { catalogPage, connectorPage } from './connectors.ts';
import { llmsText } from './llms.ts';
import { joinWaitlist } from './waitlist.ts';

export default definePlugin({
  routes: {
    llms: llmsText,
    connectors: catalogPage,
    connector: connectorPage,
    'join-waitlist': joinWaitlist,
  },
});
