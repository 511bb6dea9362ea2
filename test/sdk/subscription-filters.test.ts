import { describe, expect, it } from 'vitest';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

const manifest = (events: unknown[], capabilities = ['events.subscribe', 'events.hooks']) => ({
  key: 'filtering', version: '1.0.0', sdkApiVersion: 1, displayName: 'Filtering', entry: 'src/index.ts',
  capabilities: capabilities.map((id) => ({ id, reason: 'test' })), events,
});

const issues = (value: unknown) => {
  try { validateManifest(value); } catch (error) { return (error as InvalidManifestError).issues; }
  return [];
};

/** A subscription's `where` (docs/plugins/events.md, "Filtered deliveries"). */
describe("a subscription's delivery filter", () => {
  it('accepts `in` and `nonEmpty` conditions on after_commit subscriptions', () => {
    expect(issues(manifest([
      { event: 'company.status_changed', mode: 'after_commit', where: { to: { in: ['paused', 'archived'] }, reason: { in: [null, 'budget', 3, true] } } },
      { event: 'work.issue.comment_added', mode: 'after_commit', where: { wakeAgentIds: { nonEmpty: true } } },
    ]))).toEqual([]);
  });

  it('is refused on an in_transaction or an awaited subscription', () => {
    expect(issues(manifest([{ event: 'company.updated', mode: 'in_transaction', where: { changes: { nonEmpty: true } } }])))
      .toContainEqual({ path: 'events.0.where', message: 'only an after_commit subscription that is not awaited can filter its deliveries' });
    expect(issues(manifest([{ event: 'company.updated', mode: 'after_commit', awaited: true, where: { changes: { nonEmpty: true } } }])))
      .toContainEqual({ path: 'events.0.where', message: 'only an after_commit subscription that is not awaited can filter its deliveries' });
  });

  it('refuses a member the event\'s payload cannot have, where its schema is known', () => {
    expect(issues(manifest([{ event: 'work.issue.comment_added', mode: 'after_commit', where: { wakeAgentId: { nonEmpty: true } } }])))
      .toContainEqual(expect.objectContaining({ path: 'events.0.where.wakeAgentId', message: expect.stringMatching(/^names no member of the event's payload \(its members: .*wakeAgentIds/) }));
  });

  it('refuses two after_commit subscriptions to one event (which filter would hold?)', () => {
    expect(issues(manifest([{ event: 'company.updated', mode: 'after_commit' }, { event: 'company.updated', mode: 'after_commit', where: { changes: { nonEmpty: true } } }])))
      .toContainEqual({ path: 'events.1.event', message: 'is subscribed after_commit twice' });
    // A validator and a subscriber of one event stay two different things.
    expect(issues(manifest([{ event: 'company.updated', mode: 'in_transaction' }, { event: 'company.updated', mode: 'after_commit' }]))).toEqual([]);
  });

  it('refuses malformed conditions', () => {
    const bad: unknown[] = [
      {},
      { to: {} },
      { to: { in: [] } },
      { to: { in: [{ nested: 1 }] } },
      { to: { in: [['a']] } },
      { to: { in: Array.from({ length: 21 }, (_, i) => `s${i}`) } },
      { to: { in: ['x'.repeat(201)] } },
      { to: { nonEmpty: false } },
      { to: { in: ['a'], nonEmpty: true } },
      { to: { equals: 'a' } },
      { 'payload.to': { in: ['a'] } },
      { a: { nonEmpty: true }, b: { nonEmpty: true }, c: { nonEmpty: true }, d: { nonEmpty: true }, e: { nonEmpty: true } },
    ];
    for (const where of bad) {
      expect(issues(manifest([{ event: 'company.status_changed', mode: 'after_commit', where }])).length, JSON.stringify(where)).toBeGreaterThan(0);
    }
  });
});
