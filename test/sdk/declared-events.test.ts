import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { costsEvents, definePluginWith, kernelEvents, workEvents, type PayloadOf } from '../../sdk/plugin/index.ts';
import { KERNEL_EVENTS } from '../../sdk/events/kernel-events.ts';
import { PLUGIN_EVENTS } from '../../sdk/events/plugin-events.ts';
import { KERNEL_EVENT_NAMES, manifestSchema } from '../../sdk/manifest/fragments.ts';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

/**
 * An event is declared once (sdk/events) and its publisher and subscribers read it: a payload
 * that does not match the declaration does not compile (`npm run typecheck` checks each
 * @ts-expect-error line: it must stay an error), and a publisher's plugin.json that says
 * otherwise than the declaration is refused.
 */
const definePluginOfManifest = definePluginWith(['events.subscribe', 'events.publish'] as const);

describe('events declared once', () => {
  it('types a subscriber by the declaration its key names', () => {
    const onRunClosed = async (payload: PayloadOf<typeof kernelEvents.runClosed>) => { void payload.runId; };
    const onWrongPayload = async (payload: { runId: number }) => { void payload.runId; };
    const definition = definePluginOfManifest({
      events: {
        [kernelEvents.runClosed.name]: onRunClosed,
        [workEvents.issueCreated.name]: async (payload) => {
          const status: 'backlog' | 'todo' | 'in_progress' | 'in_review' | 'done' | 'blocked' | 'cancelled' = payload.status;
          // @ts-expect-error the declared payload has no such field
          void payload.title;
          void status;
        },
        // An event the SDK does not declare: its handler gets a JSON object.
        'other-plugin.thing.happened': async (payload) => { void payload.anything; },
      },
    });
    definePluginOfManifest({
      events: {
        // @ts-expect-error run.closed's runId is a string
        [kernelEvents.runClosed.name]: onWrongPayload,
      },
    });
    expect(Object.keys(definition.events!)).toEqual(['run.closed', 'work.issue.created', 'other-plugin.thing.happened']);
  });

  it('types a publish by the declaration it names', () => {
    const definition = definePluginOfManifest({
      routes: {
        stop: async (_request, ctx) => {
          const payload = { scopeType: 'project', scopeId: 'p', reason: 'budget', incidentId: 'i' } as const;
          await ctx.events.publish(costsEvents.budgetStopped.name, payload, { entityType: 'project', entityId: 'p' });
          // @ts-expect-error scopeType is the constant 'project'
          await ctx.events.publish(costsEvents.budgetStopped.name, { ...payload, scopeType: 'company' }, { entityType: 'project', entityId: 'p' });
          // @ts-expect-error a created issue has an identifier
          await ctx.events.publish(workEvents.issueCreated.name, { issueId: 'i', status: 'todo' }, { entityType: 'issue', entityId: 'i' });
          // An event the SDK does not declare takes any JSON object.
          await ctx.events.publish('other-plugin.thing.happened', { anything: 1 }, { entityType: 'thing', entityId: 't' });
          return null;
        },
      },
    });
    expect(typeof definition.routes!.stop).toBe('function');
  });

  it('names the kernel events of the manifest schema from their declarations', () => {
    expect(KERNEL_EVENT_NAMES).toEqual(KERNEL_EVENTS.map((event) => event.name));
    const subscription = manifestSchema.properties.events.items.properties.event.anyOf[0];
    expect(subscription.enum).toEqual(KERNEL_EVENTS.map((event) => event.name));
  });

  it('accepts the publishers whose plugin.json says what sdk/events declares', () => {
    for (const key of ['work', 'costs']) {
      const manifest = validateManifest(readFileSync(`plugins/${key}/plugin.json`, 'utf8'), `plugins/${key}/plugin.json`);
      expect(manifest.publishedEvents!.map((event) => event.name)).toEqual(expect.arrayContaining(
        PLUGIN_EVENTS.filter((event) => event.publisher === key).map((event) => event.name)));
    }
  });

  it('refuses a publisher whose plugin.json drifts from the declaration, or leaves a declared event out', () => {
    const work = JSON.parse(readFileSync('plugins/work/plugin.json', 'utf8'));
    work.publishedEvents[0].schema.properties.status.enum.push('archived');
    expect(() => validateManifest(work)).toThrow(InvalidManifestError);
    expect(() => validateManifest(work)).toThrow('publishedEvents.0 differs from the declaration of work.issue.created in sdk/events');

    const costs = JSON.parse(readFileSync('plugins/costs/plugin.json', 'utf8'));
    costs.publishedEvents = costs.publishedEvents.filter((event: { name: string }) => event.name !== 'costs.budget.resumed');
    expect(() => validateManifest(costs)).toThrow('publishedEvents must declare costs.budget.resumed, which sdk/events declares as published by costs');
  });
});
