import { MAX_SKILL_FILE_BYTES, mayBeBinary, SKILL_FILE, type FileKind } from '../skill-file/inventory.ts';

/**
 * The skill audit (scan `skills-audit-v1`, pure): a verdict over a skill's files. `fail` blocks
 * updates whatever `force` says; `warning` is informative (local modifications hold updates
 * softly, elsewhere).
 */
export const AUDIT_SCAN_VERSION = 'skills-audit-v1';
export type AuditVerdict = 'pass' | 'warning' | 'fail';
export type AuditCode = 'missing_skill_file' | 'file_too_large' | 'non_text_file' | 'remote_code_execution' | 'local_modifications';

export interface AuditFinding { code: AuditCode; severity: 'warning' | 'fail'; path: string | null; message: string }
export interface AuditFile { path: string; kind: FileKind | string; encoding: 'utf8' | 'base64' | string; content: string; sizeBytes: number }

/**
 * Fetching code from the network and running it in one step: the skill would run whatever
 * that address serves at the time, which no review of the skill can cover.
 */
const REMOTE_EXECUTION: readonly RegExp[] = [
  /\b(curl|wget|fetch)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b/i,
  /\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(python3?|node|perl|ruby|php)\b/i,
  /\b(ba|z)?sh\s+(-c\s+)?["']?\$?<?\(\s*(curl|wget)\b/i,
  /\beval\s*\(?\s*["']?\$\(\s*(curl|wget)\b/i,
  /\b(iex|Invoke-Expression)\b[^\n]*\b(iwr|irm|Invoke-WebRequest|Invoke-RestMethod|DownloadString)\b/i,
  /\b(iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]*\|\s*(iex|Invoke-Expression)\b/i,
];

export function auditFiles(files: readonly AuditFile[], hashes: { installedHash: string | null; originHash: string | null }): { verdict: AuditVerdict; codes: AuditCode[]; findings: AuditFinding[] } {
  const findings: AuditFinding[] = [];
  if (!files.some((file) => file.path === SKILL_FILE)) findings.push({ code: 'missing_skill_file', severity: 'fail', path: SKILL_FILE, message: `The skill has no ${SKILL_FILE}` });
  for (const file of files) {
    if (file.sizeBytes > MAX_SKILL_FILE_BYTES) {
      findings.push({ code: 'file_too_large', severity: 'fail', path: file.path, message: `${file.path} is ${file.sizeBytes} bytes; skill files may be at most ${MAX_SKILL_FILE_BYTES}` });
    }
    const binary = file.encoding !== 'utf8' || file.content.includes('\u0000');
    if (binary && !mayBeBinary(file.kind as FileKind)) {
      findings.push({ code: 'non_text_file', severity: 'fail', path: file.path, message: `${file.path} is not a text file; only files under assets/ may be binary` });
    }
    if (!binary && REMOTE_EXECUTION.some((pattern) => pattern.test(file.content))) {
      findings.push({ code: 'remote_code_execution', severity: 'fail', path: file.path, message: `${file.path} downloads code and runs it in one step` });
    }
  }
  if (hashes.originHash && hashes.installedHash && hashes.installedHash !== hashes.originHash) {
    findings.push({ code: 'local_modifications', severity: 'warning', path: null, message: 'The installed files differ from the version that was installed (local modifications)' });
  }
  const codes = [...new Set(findings.map((finding) => finding.code))];
  const verdict: AuditVerdict = findings.some((finding) => finding.severity === 'fail') ? 'fail' : findings.length > 0 ? 'warning' : 'pass';
  return { verdict, codes, findings };
}
