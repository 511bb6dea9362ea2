import { secretsResolve as spec } from '../../../../sdk/capabilities/runs.ts';
import { KeelError } from '../../../http/errors.ts';
import { resolveRunEnvironment } from '../../../vault/run-environment.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import { DeliversSecrets, type KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * Secret resolution for the agent runtime (secrets.resolve): the environment of a run of an
 * agent (values a plugin writes into the vault: secrets-store/). Values reach
 * only a plugin that declared secrets.resolve and was granted it, and every resolution is
 * written to the security audit trail (names and versions, never values).
 */
const secretsCapability: KernelCapability<'db' | 'vault'> = {
  methods: {
    resolveEnvironment: {
      run: async (call) => {
        const agentId = uuidArg(call.args[0], 'agentId');
        const { kernel } = call;
        const agent = await kernel.db.maybeOne(`select id, company_id, adapter_config from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!agent) throw new KeelError(404, 'not_found', 'Agent not found');
        const resolved = await resolveRunEnvironment(kernel.db, kernel.vault, agent as never);
        if (resolved.secrets.length > 0) {
          await kernel.db.query(
            `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
            [agent.company_id, `plugin:${call.plugin}`, agentId, call.info.runId, JSON.stringify({ plugin: call.plugin, secrets: resolved.secrets })]);
        }
        return new DeliversSecrets(resolved.env, resolved.secrets.map((secret) => resolved.env[secret.envName]!));
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db', 'vault'] }, serves: { secrets: secretsCapability.methods } });
