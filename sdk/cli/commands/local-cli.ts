import { clientFor, session, type GlobalOptions } from '../output.ts';
import { path, resolveAgent } from './agent-ref.ts';
import { linkBundledSkills, type LinkReport } from './skill-links.ts';

interface MintedKey { id: string; name: string; token: string; keyPrefix: string; createdAt: string }

/** A value for a POSIX shell, quoted so that `eval` takes it as one word whatever it holds. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * `keel agent local-cli <id-or-shortname>`: everything a local coding tool needs to act as the
 * agent. Mints a long-lived agent key (the token is printed here and nowhere else; the server
 * keeps only its hash), links the bundled skills into the tools' skill directories unless
 * `--no-install-skills`, and prints the four `export` lines. stdout carries only those lines,
 * so `eval "$(keel agent local-cli coder -C <company>)"` sets them; the rest goes to stderr.
 * With --json, one document on stdout (the token under `exports.SERVICE_API_KEY`).
 */
export async function localCliCommand(ref: string, options: GlobalOptions & { keyName?: string; installSkills?: boolean }): Promise<void> {
  const client = clientFor(options);
  const agent = await resolveAgent(client, ref, options);
  const keyName = options.keyName ?? 'local-cli';
  const key = await client.post<MintedKey>(path`/api/agents/${agent.id}/keys`, { name: keyName });
  const skills: LinkReport | null = options.installSkills === false ? null : linkBundledSkills();
  const exports = {
    SERVICE_API_URL: session(options).apiBase,
    SERVICE_COMPANY_ID: agent.companyId,
    SERVICE_AGENT_ID: agent.id,
    SERVICE_API_KEY: key.token,
  };
  if (options.json) {
    const { token: _shownOnceInExports, ...keyWithoutToken } = key;
    process.stdout.write(`${JSON.stringify({ agent: { id: agent.id, name: agent.name, urlKey: agent.urlKey ?? null, companyId: agent.companyId }, key: keyWithoutToken, skills, exports })}\n`);
    return;
  }
  const notes = [
    `Agent ${agent.name} (${agent.id}) of company ${agent.companyId}`,
    `Minted agent key "${key.name}" (${key.keyPrefix}…, id ${key.id}). The token below is shown once: the server keeps only its hash.`,
    ...describeSkills(skills),
  ];
  process.stderr.write(`${notes.join('\n')}\n`);
  process.stdout.write(`${Object.entries(exports).map(([name, value]) => `export ${name}=${shellQuote(value)}`).join('\n')}\n`);
}

function describeSkills(report: LinkReport | null): string[] {
  if (!report) return ['Skills: not installed (--no-install-skills)'];
  if (report.note) return [`Skills: ${report.note}`];
  return report.targets.map((target) => {
    const parts = [`${target.linked.length} linked`, `${target.unchanged.length} already linked`];
    if (target.skipped.length) parts.push(`${target.skipped.length} left alone (${target.skipped.map((s) => `${s.slug}: ${s.reason}`).join('; ')})`);
    return `Skills in ${target.dir}: ${parts.join(', ')}`;
  });
}
