import type { Database } from '../db/database.ts';
import type { AgentJwt } from './agent-jwt.ts';

export class SharedSecretMismatchError extends Error {}

/**
 * Several Keel processes on one database must sign agent tokens with one secret: a token one
 * process mints would otherwise be refused by the next behind the same load balancer, at
 * random. The first process records a fingerprint of its secret; a process whose secret
 * differs refuses to start, naming the setting.
 */
export async function assertSharedAgentSecret(db: Database, jwt: AgentJwt): Promise<void> {
  const fingerprint = jwt.derive('instance-fingerprint').toString('hex');
  await db.exec("insert into keel_private.instance_fingerprints (name, fingerprint) values ('agent_jwt_secret', ?) on conflict (name) do nothing", [fingerprint]);
  const recorded = await db.maybeOne<{ fingerprint: string }>("select fingerprint from keel_private.instance_fingerprints where name = 'agent_jwt_secret'");
  if (recorded && recorded.fingerprint !== fingerprint) {
    throw new SharedSecretMismatchError(
      'the agent token secret (auth.agentJwtSecret, KEEL_AGENT_JWT_SECRET, or the data directory\'s agent-jwt.secret) differs from the one the other Keel processes on this database use; '
      + 'give every process the same secret (agent tokens minted by one would be refused by another)');
  }
}
