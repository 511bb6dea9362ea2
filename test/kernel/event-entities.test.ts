import type { Company } from '../../sdk/shared/principal-json.ts';
import { describe, expect, it } from 'vitest';
import { entityOf, isKernelEventName } from '../../kernel/events/event-bus.ts';
import { about, kernelEvent } from '../../sdk/events/define.ts';
import { KERNEL_EVENTS } from '../../sdk/events/kernel-events.ts';

/**
 * Each kernel event's declaration names what it is about (sdk/events/kernel-events.ts); the
 * kernel appends it with that entity (one publisher's events of one entity arrive in commit
 * order) without reading the payload through a cast.
 */
describe('kernel event entities', () => {
  it('are read from the payload by the event\'s own declaration', () => {
    const actor = { actorType: 'system', actorId: 'test' } as const;
    expect(entityOf('company.created', { companyId: 'c1', company: {} as Company, actor })).toEqual({ type: 'company', id: 'c1' });
    expect(entityOf('agent.status_changed', { companyId: 'c1', agentId: 'a1', from: 'idle', to: 'paused', reason: null, actor })).toEqual({ type: 'agent', id: 'a1' });
    expect(entityOf('approval.created', { companyId: 'c1', approvalId: 'p1', approval: {}, actor })).toEqual({ type: 'approval', id: 'p1' });
    expect(entityOf('run.closed', { companyId: 'c1', runId: 'r1', agentId: 'a1', status: 'succeeded', reason: null })).toEqual({ type: 'run', id: 'r1' });
    expect(entityOf('execution.output', { companyId: 'c1', executionId: 'e1', runId: 'r1', agentId: 'a1', outputs: [] })).toEqual({ type: 'execution', id: 'e1' });
  });

  it('are named by every kernel event, and only kernel event names pass the guard', () => {
    for (const declaration of KERNEL_EVENTS) {
      expect(typeof declaration.entity, declaration.name).toBe('function');
      expect(isKernelEventName(declaration.name)).toBe(true);
    }
    expect(isKernelEventName('agent.creatd')).toBe(false);
    expect(isKernelEventName('constructor')).toBe(false);
  });

  it('must name a string member of the payload', () => {
    // @ts-expect-error the payload has no string `runId`
    kernelEvent<{ companyId: string; runId: number }>()('run.probe', about('run', 'runId'));
    // @ts-expect-error entityOf takes the payload of the event it names
    entityOf('run.closed', { companyId: 'c1', agentId: 'a1' });
    expect(kernelEvent<{ companyId: string; id: string }>()('x.probe', about('x', 'id')).entity({ companyId: 'c', id: 'i' })).toEqual({ type: 'x', id: 'i' });
  });
});
