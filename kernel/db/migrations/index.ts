import { readFileSync } from 'node:fs';
import { Migration } from '@mikro-orm/migrations';

/**
 * Kernel migrations, applied in this order and recorded in `kernel_migrations`. Each one is
 * a plain SQL file beside this module so that schema changes read as SQL in review. A
 * migration is never edited after it ships; add a new file instead.
 */
const files = [
  '0001-kernel-foundation.sql',
  '0002-companies.sql',
  '0003-agents.sql',
  '0004-auth-and-instance.sql',
  '0005-vault-and-runs.sql',
  '0006-cache-invalidation.sql',
  '0007-extension-host.sql',
  '0008-host-tables.sql',
  '0009-budget-bridge.sql',
  '0010-activity-append.sql',
  '0011-service-calls.sql',
  '0012-activity-entity-scope.sql',
  '0013-blobs.sql',
  '0014-event-outbox.sql',
  '0015-enqueued-jobs.sql',
  '0018-staged-jobs.sql',
  '0019-instance-fingerprints.sql',
  '0020-scope-holds.sql',
  '0021-issue-numbers.sql',
  '0022-approval-decisions.sql',
  '0023-executions.sql',
  '0024-database-backups.sql',
  '0025-company-imports.sql',
  '0026-run-confirmations.sql',
  '0027-remote-run-stops.sql',
  '0028-plugin-tool-approvals.sql',
  '0029-issue-number-ranges.sql',
  '0030-managed-agents.sql',
  '0031-workspace-executions.sql',
  '0032-company-feedback-consent.sql',
  '0033-event-publish-scope.sql',
  '0034-blob-quotas.sql',
  '0035-remote-run-scope-and-deadlines.sql',
  '0036-proxied-calls.sql',
  '0037-run-context-index.sql',
  '0038-job-runs-running-index.sql',
  '0040-one-activity-writer.sql',
  '0041-company-spend-notifications.sql',
  '0042-events-published-at-commit.sql',
  '0043-one-hold-writer.sql',
  '0045-month-spend-from-costs.sql',
  '0050-bridge-function-sources.sql',
  '0052-subscribed-events-column.sql',
  '0053-ledger-keeps-no-run-outcome.sql',
  '0054-subscription-filters.sql',
  '0055-activity-chained-by-its-writer.sql',
];

function sqlMigration(file: string): typeof Migration {
  const sql = readFileSync(new URL(file, import.meta.url), 'utf8');
  class SqlMigration extends Migration {
    override name = file.replace(/\.sql$/, '');
    up(): void {
      this.addSql(sql);
    }
  }
  return SqlMigration as unknown as typeof Migration;
}

export const kernelMigrations = files.map(sqlMigration) as unknown as Array<new (...args: any[]) => Migration>;
