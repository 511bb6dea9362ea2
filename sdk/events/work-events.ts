import { pluginEvent } from './define.ts';

/**
 * The work plugin's events (plugins/work publishes them; the runtime, wiki and summaries
 * plugins subscribe). plugins/work/plugin.json declares the same names, descriptions and
 * schemas under publishedEvents: `keel plugin build` refuses it when they differ.
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const uuidOrNull = { type: ['string', 'null'], format: 'uuid' } as const;
const identifier = { type: 'string', maxLength: 64 } as const;
const issueStatus = { enum: ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked', 'cancelled'] } as const;

export const issueCreated = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.created',
  publisher: 'work',
  description: 'An issue was created.',
  schema: {
    type: 'object', additionalProperties: false,
    properties: { issueId: uuid, identifier, status: issueStatus, assigneeAgentId: uuidOrNull },
    required: ['issueId', 'identifier', 'status'],
  },
});

export const issueUpdated = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.updated',
  publisher: 'work',
  description: 'Fields of an issue changed (changes holds the new values).',
  schema: {
    type: 'object', additionalProperties: false,
    properties: { issueId: uuid, identifier, changes: { type: 'object' } },
    required: ['issueId', 'identifier', 'changes'],
  },
});

export const issueAssigned = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.assigned',
  publisher: 'work',
  description: 'An issue was given to an agent (by a create, a patch or a checkout): the runtime wakes the agent.',
  schema: {
    type: 'object', additionalProperties: false,
    properties: {
      issueId: uuid, identifier, agentId: uuid, previousAgentId: uuidOrNull, status: issueStatus,
      byAgentId: {
        ...uuidOrNull,
        description: 'The agent that made the assignment (a checkout, or an agent\'s create or patch); null for a board user. The runtime does not wake an agent for an assignment it made itself.',
      },
    },
    required: ['issueId', 'identifier', 'agentId'],
  },
});

export const issueCommentAdded = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.comment_added',
  publisher: 'work',
  description: 'A comment was added; wakeAgentIds are the agents it mentions or answers (and the assignee, for a comment by someone else).',
  schema: {
    type: 'object', additionalProperties: false,
    properties: {
      issueId: uuid, identifier, commentId: uuid, authorType: { enum: ['agent', 'user', 'system'] }, authorAgentId: uuidOrNull,
      mentionedAgentIds: { type: 'array', items: uuid }, wakeAgentIds: { type: 'array', items: uuid },
    },
    required: ['issueId', 'identifier', 'commentId', 'wakeAgentIds'],
  },
});

export const issueBlockersResolved = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.blockers_resolved',
  publisher: 'work',
  description: 'The last unresolved blocker of an issue was resolved (done or cancelled): the runtime wakes its assignee agent.',
  schema: {
    type: 'object', additionalProperties: false,
    properties: { issueId: uuid, identifier, assigneeAgentId: uuid, resolvedBlockerIssueId: uuid },
    required: ['issueId', 'identifier', 'assigneeAgentId', 'resolvedBlockerIssueId'],
  },
});

export const issueDocumentUpdated = /* @__PURE__ */ pluginEvent({
  name: 'work.issue.document_updated',
  publisher: 'work',
  description: 'A document of an issue got a new revision (created is true for its first).',
  schema: {
    type: 'object', additionalProperties: false,
    properties: {
      issueId: uuid, identifier, documentId: uuid, key: { type: 'string', maxLength: 64 }, revisionId: uuid,
      revisionNumber: { type: 'integer', minimum: 1 }, created: { type: 'boolean' },
    },
    required: ['issueId', 'identifier', 'documentId', 'key', 'revisionId', 'revisionNumber', 'created'],
  },
});

export const WORK_EVENTS = [issueCreated, issueUpdated, issueAssigned, issueCommentAdded, issueBlockersResolved, issueDocumentUpdated] as const;
