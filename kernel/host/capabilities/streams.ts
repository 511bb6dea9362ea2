import { KeelError } from '../../http/errors.ts';
import { streams } from '../api/ui-routes.ts';
import type { KernelCapability } from './types.ts';

/** `ctx.streams.publish(channel, data)`: server-sent events to the plugin's UI subscribers. */
export const streamsCapability: KernelCapability = {
  methods: {
    publish: {
      needs: ['ui.streams'], scope: 'instance',
      run: async (call) => {
        const [channel, data] = call.args as [unknown, unknown];
        if (typeof channel !== 'string' || !/^[a-z][a-z0-9-]{0,63}$/.test(channel)) throw new KeelError(400, 'invalid_channel', 'Channel names are lower-case letters, digits and dashes');
        if (JSON.stringify(data ?? null).length > 64_000) throw new KeelError(413, 'event_too_large', 'A stream event is at most 64,000 characters');
        return { delivered: streams(call.kernel).publish(call.plugin, channel, data ?? null) };
      },
    },
  },
};
