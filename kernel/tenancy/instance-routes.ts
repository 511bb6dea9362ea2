import { basename } from 'node:path';
import { backupDirectory, takeDatabaseBackup } from '../backup/database-backup.ts';
import { listBackups, MAX_LISTED_BACKUPS } from '../backup/list-backups.ts';
import type { RouteModule } from '../http/app.ts';
import { conflict, KeelError } from '../http/errors.ts';
import { actorOf } from '../http/guards.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import { readSettings, settingsPatchValidator, writeSettings, type SettingsSection } from './instance-settings.ts';

/**
 * Instance administration: the general and experimental settings (readable by any board
 * actor, writable by instance admins and the local board) and the browser first-admin claim.
 */
const SECTIONS: SettingsSection[] = ['general', 'experimental'];
const NO_FIELDS = bodyValidator<Record<string, never>>({ type: 'object', additionalProperties: false, properties: {} });

export const instanceRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Instance');

  for (const section of SECTIONS) {
    const path = `/api/instance/settings/${section}`;

    route({ method: 'GET', path, auth: 'board', success: 200, summary: `The instance's ${section} settings` }, async (ctx) => {
      ctx.body = await readSettings(kernel.db, section);
    });

    route({
      method: 'PATCH', path, auth: 'instance_admin', body: settingsPatchValidator(section), success: 200,
      summary: `Change some of the instance's ${section} settings; answers the settings as they stand`,
    }, async (ctx, req) => {
      const patch = await req.body();
      const { settings, changes } = await kernel.db.transaction(async (tx) => {
        const result = await writeSettings(tx, section, patch);
        if (Object.keys(result.changes).length > 0) {
          await kernel.activity.recordFor(ctx, tx, {
            companyId: null, action: 'instance_settings.updated', entityType: 'instance_settings', entityId: section,
            details: { section, changes: result.changes },
          });
        }
        return result;
      });
      // A patch that changes nothing is not a mutation worth an audit entry.
      if (Object.keys(changes).length === 0) ctx.state.skipAudit = true;
      ctx.body = settings;
    });
  }

  route({
    method: 'GET', path: '/api/instance/database-backups', auth: 'instance_admin', success: 200, response: LIST_RESPONSE,
    summary: 'The database backups in the backup directory, newest first',
    description: `Each backup file of the backup directory as \`{file, sizeBytes, takenAt}\`: the file's name (never a path), its size and the time in its name; regular files named like backups only, at most ${MAX_LISTED_BACKUPS}. Instance admins only.`,
  }, async (ctx) => {
    ctx.body = await listBackups(backupDirectory(kernel.config));
  });

  route({
    method: 'POST', path: '/api/instance/database-backups', auth: 'instance_admin', body: NO_FIELDS, success: 201, errors: [409],
    summary: 'Take a database backup now',
    description: 'Writes a compressed snapshot of every kernel and plugin table into the backup directory, then applies the retention of general.backupRetention. Answers the file, its size, how many older backups were pruned, the directory, the retention and the timing. One backup runs at a time across every process on the database: 409 `database_backup_in_progress` while another runs. Instance admins only.',
  }, async (ctx, req) => {
    // No field is known: a body naming one is refused rather than silently ignored.
    await req.body();
    const result = await takeDatabaseBackup(kernel, 'manual');
    await kernel.activity.recordFor(ctx, kernel.db, {
      companyId: null, action: 'instance.database_backup_created', entityType: 'database_backup', entityId: basename(result.file),
      details: { file: basename(result.file), sizeBytes: result.sizeBytes, prunedCount: result.prunedCount, durationMs: result.durationMs },
    });
    ctx.status = 201;
    ctx.body = result;
  });

  route({
    method: 'POST', path: '/api/bootstrap/claim', auth: 'session', success: 200, errors: [404, 409],
    summary: 'Claim first instance admin from a browser session',
    description: 'Only in authenticated mode with private exposure (404 `claim_not_available` otherwise); 409 `instance_already_claimed` once someone has.',
  }, async (ctx) => {
    if (kernel.config.deploymentMode !== 'authenticated' || kernel.config.server.exposure !== 'private') {
      throw new KeelError(404, 'claim_not_available', 'Browser first-admin claim is not available');
    }
    const actor = actorOf(ctx);
    if (actor.kind !== 'board' || actor.source !== 'session') {
      throw new KeelError(401, 'browser_session_required', 'Sign in from a browser session before claiming first admin');
    }
    const userId = actor.userId;
    await kernel.db.transaction(async (tx) => {
      // instance_claims holds at most one row: concurrent claims serialise on its primary key.
      const claimed = await tx.maybeOne(
        'insert into instance_claims (user_id) values (?) on conflict (id) do nothing returning user_id', [userId]);
      const existingAdmin = claimed ? await tx.maybeOne('select id from users where is_instance_admin limit 1') : undefined;
      if (!claimed || existingAdmin) throw conflict('Someone else has already claimed this instance', undefined, 'instance_already_claimed');
      await tx.exec('update users set is_instance_admin = true, updated_at = now() where id = ?', [userId]);
      await kernel.invalidate(tx, { type: 'user', id: userId });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'instance.admin_claimed', entityType: 'user', entityId: userId, details: { via: 'browser_claim' },
      });
    });
    ctx.body = { claimed: true, userId };
  });
};
