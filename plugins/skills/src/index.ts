import { definePlugin } from '@keel/sdk/plugin';
import { SKILLS_CAPABILITIES } from './context.ts';

/**
 * Route handlers by plugin.json route key. Company skill routes and agent skill routes come
 * first; the catalog's routes (src/catalog/) follow as their own group.
 */
export default definePlugin({
  capabilities: SKILLS_CAPABILITIES,
  routes: {},
});
