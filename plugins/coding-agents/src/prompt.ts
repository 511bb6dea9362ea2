import type { CodingAgentsContext } from './context.ts';

interface IssueSource {
  id: string; identifier: string; title: string; status: string; description: string; truncated: boolean;
  comments: Array<{ authorType: string; authorAgentId: string | null; authorUserId: string | null; body: string; createdAt: string }>;
}

export interface Wake { source?: unknown; triggerDetail?: unknown; reason?: unknown; payload?: unknown }

/** How much of the issue the prompt carries: its description and its latest comments. */
const MAX_DESCRIPTION = 8_000;
const MAX_COMMENT = 2_000;
const LATEST_COMMENTS = 10;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}\n[… ${text.length - max} characters cut]` : text);

/**
 * The prompt of a run, built from its wake: the bound issue (identifier, title, status,
 * description and latest comments, read through the work plugin), the wake's reason and payload,
 * and a standing text telling the agent how to reach Keel. It goes on the tool's standard input.
 */
export async function promptFor(ctx: CodingAgentsContext, input: { agentId: string; issueId: string | null; wake: Wake; skills: string[] }): Promise<string> {
  const parts: string[] = [];
  const reason = typeof input.wake.reason === 'string' && input.wake.reason !== '' ? input.wake.reason : null;
  parts.push(`You were woken by Keel (${String(input.wake.source ?? 'on_demand')}${reason ? `: ${reason}` : ''}).`);
  if (input.issueId) {
    const { issue } = await ctx.services.call<{ issue: IssueSource | null }>('work', 'issue-source', { issueId: input.issueId, maxCharacters: 100_000 });
    if (issue) {
      parts.push(`## Your issue: ${issue.identifier} ${issue.title}\nStatus: ${issue.status}\nIssue id: ${issue.id}\n\n${cut(issue.description || '(no description)', MAX_DESCRIPTION)}`);
      const latest = issue.comments.slice(-LATEST_COMMENTS);
      if (latest.length > 0) {
        const older = issue.comments.length - latest.length;
        parts.push(`## Latest comments (oldest first${older > 0 ? `; ${older} earlier not shown` : ''})\n${latest.map((comment) => {
          const author = comment.authorType === 'agent' ? (comment.authorAgentId === input.agentId ? 'you' : `agent ${comment.authorAgentId}`) : 'a board user';
          return `- ${author} at ${comment.createdAt}:\n${cut(comment.body, MAX_COMMENT)}`;
        }).join('\n')}`);
      }
    }
  }
  const payload = input.wake.payload;
  if (payload && typeof payload === 'object' && Object.keys(payload).length > 0) parts.push(`## Wake payload\n${cut(JSON.stringify(payload, null, 2), 4_000)}`);
  parts.push(STANDING_TEXT + (input.skills.length > 0 ? `\nYour skills: ${input.skills.join(', ')} (in your tool's skills, and under $SERVICE_SKILLS_DIR).` : ''));
  return `${parts.join('\n\n')}\n`;
}

/** How an agent reaches Keel: the run's variables, never a credential in the prompt. */
const STANDING_TEXT = `## Working with Keel
Use your shell to call Keel's API. Your environment holds SERVICE_API_URL (Keel's address), SERVICE_API_KEY
(this run's token: send it as "Authorization: Bearer $SERVICE_API_KEY"; it ends with the run), SERVICE_RUN_ID,
SERVICE_AGENT_ID, SERVICE_COMPANY_ID and, when you work on an issue, SERVICE_TASK_ID. Read your issue with
GET $SERVICE_API_URL/api/issues/$SERVICE_TASK_ID, comment with POST /api/issues/{id}/comments {"body": "..."},
and change its status with PATCH /api/issues/{id} {"status": "done"}. Never print the token.`;
