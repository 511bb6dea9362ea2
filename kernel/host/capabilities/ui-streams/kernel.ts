import { uiStreams as spec } from '../../../../sdk/capabilities/services.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * `ctx.streams.publish(channel, data)`: a server-sent event to the subscribers of the plugin's
 * channel in the scope of the call: the company the call serves, or the instance when it
 * serves none. The host attaches the scope; the plugin cannot name another company's channel.
 */
const streamsCapability: KernelCapability<never, 'streams'> = {
  methods: {
    publish: {
      run: async (call) => {
        const [channel, data] = call.args as [unknown, unknown];
        const scope = call.info.companyId ? { companyId: call.info.companyId } : { instance: true as const };
        await call.host.streams.publish(call.plugin, scope, channel as string, data);
        return { published: true };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { host: ['streams'] }, serves: { streams: streamsCapability.methods } });
