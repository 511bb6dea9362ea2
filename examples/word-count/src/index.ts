import { definePlugin } from './plugin.gen.ts';
import { countText } from './count.ts';

export default definePlugin({
  tools: {
    // The host has validated the input against the tool's schema (and applied `top`'s default) before this runs.
    count: (input) => {
      const { text, top } = input as { text: string; top: number };
      return countText(text, top);
    },
  },
});
