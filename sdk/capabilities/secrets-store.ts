import { defineCapability, method } from './define.ts';
import { nullable, uuid } from './schemas.ts';

/** The largest value `ctx.secrets.store` takes (the vault's own limit). */
export const MAX_STORED_SECRET_BYTES = 64 * 1024;

/**
 * Writes a value the plugin was handed (a key a board user typed into the plugin's form) into
 * the vault of the company the call serves, so that the plugin keeps a reference and never the
 * value. The secret is named `<plugin key>:<name>` (the plugin's names cannot collide with the
 * board's own secrets or another plugin's); storing a name the plugin stored before adds a new
 * version. The vault writes the activity entry (`secret.created` or `secret.rotated`, never
 * the value) in its own transaction: call it after every check of the handler, and before the
 * handler writes activity of its own.
 */
export interface SecretsStoreCapability {
  store(input: { name: string; value: string; description?: string | null }): Promise<{ secretId: string; version: number }>;
  /**
   * A secret of the company the call serves, by id (metadata only, never a value): for checking
   * a secret reference a caller hands the plugin. null for an unknown id and for another
   * company's secret alike.
   */
  describe(secretId: string): Promise<{ secretId: string; name: string; latestVersion: number } | null>;
}

export const secretsStore = defineCapability<{ secrets: SecretsStoreCapability }>()({
  id: 'secrets.store',
  summary: "Store values in the vault of the company a call serves, as secrets the plugin names (it keeps only their references)",
  members: {
    secrets: {
      store: method('kernel', [{
        type: 'object', additionalProperties: false, required: ['name', 'value'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 150, pattern: '^[A-Za-z0-9][A-Za-z0-9_.:/-]*$' },
          value: { type: 'string', minLength: 1, maxLength: MAX_STORED_SECRET_BYTES },
          description: { type: ['string', 'null'], maxLength: 2000 },
        },
      }], { type: 'object', required: ['secretId', 'version'], properties: { secretId: { type: 'string' }, version: { type: 'integer' } } }),
      describe: method('kernel', [uuid], nullable({
        type: 'object', required: ['secretId', 'name', 'latestVersion'],
        properties: { secretId: { type: 'string' }, name: { type: 'string' }, latestVersion: { type: 'integer' } },
      })),
    },
  },
});
