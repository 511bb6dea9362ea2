import { pluginEvent } from './define.ts';

/**
 * The costs plugin's events (plugins/costs publishes them; the work plugin holds and releases
 * the project). plugins/costs/plugin.json declares the same under publishedEvents.
 */
const budgetStop = {
  type: 'object',
  required: ['scopeType', 'scopeId', 'reason', 'incidentId'],
  additionalProperties: false,
  properties: {
    scopeType: { const: 'project' },
    scopeId: { type: 'string', format: 'uuid' },
    reason: { type: 'string', maxLength: 200 },
    incidentId: { type: 'string', format: 'uuid' },
  },
} as const;

export const budgetStopped = /* @__PURE__ */ pluginEvent({
  name: 'costs.budget.stopped',
  publisher: 'costs',
  description: 'A project reached its hard budget stop: it takes no new work until the stop is lifted.',
  schema: budgetStop,
});

export const budgetResumed = /* @__PURE__ */ pluginEvent({
  name: 'costs.budget.resumed',
  publisher: 'costs',
  description: 'A project\'s hard budget stop was lifted (its budget was raised above its spend).',
  schema: budgetStop,
});

export const COSTS_EVENTS = [budgetStopped, budgetResumed] as const;
