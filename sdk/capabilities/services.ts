import { defineCapability, method, present } from './define.ts';
import { anything } from './schemas.ts';

export interface ServicesCapability {
  /**
   * Calls a service another plugin provides (declared under services.consumes). The input is
   * checked against the service's inputSchema, the result against its outputSchema. The
   * service commits in the provider's own transaction: pass an idempotencyKey when this call
   * may be retried, and a retry gets the first run's result without running it again.
   */
  call<T = unknown>(plugin: string, service: string, input?: unknown, options?: { idempotencyKey?: string }): Promise<T>;
  /**
   * The enabled plugin that contributes an adapter type (it declares the type under
   * `kernelPoints` for `agent.adapter-config` and is granted kernel.points), or null when none
   * does. Answered by the kernel from what it registered, so a plugin cannot claim to be one;
   * two plugins contributing the same type answer 409 adapter_type_contested.
   */
  adapterContributor(adapterType: string): Promise<{ plugin: string | null }>;
}

export const servicesConsume = defineCapability<{ services: ServicesCapability }>()({
  id: 'services.consume',
  summary: 'Call the services of other plugins named under services.consumes',
  members: {
    services: {
      call: method('kernel', [{ type: 'string', maxLength: 64 }, { type: 'string', maxLength: 64 }, anything, { type: 'object' }], anything, { required: 2, scope: 'instance' }),
      adapterContributor: method('kernel', [{ type: 'string', minLength: 1, maxLength: 100 }],
        { type: 'object', required: ['plugin'], properties: { plugin: { type: ['string', 'null'] } } }, { scope: 'instance' }),
    },
  },
  requiredBy: (manifest) => present(manifest, 'services.consumes'),
});

export interface StreamsCapability {
  /**
   * Sends an event to the subscribers of GET /api/plugins/{key}/bridge/stream/{channel}, in the
   * scope of this call: the company it serves (`?companyId=`), or the instance when it serves none.
   * At most 7,000 bytes of JSON.
   */
  publish(channel: string, data: unknown): Promise<{ published: true }>;
}

export const uiStreams = defineCapability<{ streams: StreamsCapability }>()({
  id: 'ui.streams',
  summary: 'Push live events to console and client subscribers of the company a call serves',
  members: { streams: { publish: method('kernel', [{ type: 'string', maxLength: 100 }, anything], { type: 'object', required: ['published'] }, { scope: 'instance' }) } },
});
