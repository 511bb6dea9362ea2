import { describe, expect, it } from 'vitest';
import { pluginSchemaAjv } from '../../sdk/manifest/plugin-schema-ajv.ts';

describe('plugin schema patterns (RE2)', () => {
  it('checks each pattern of a schema with its own expression', () => {
    const ajv = pluginSchemaAjv({ allErrors: true });
    const validate = ajv.compile({
      type: 'object',
      properties: { kind: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' }, currency: { type: 'string', pattern: '^[A-Z]{3}$' } },
    });
    expect(validate({ kind: 'platform_fee', currency: 'EUR' })).toBe(true);
    expect(validate({ kind: 'platform_fee', currency: 'eur' })).toBe(false);
    expect(validate({ kind: 'Platform', currency: 'EUR' })).toBe(false);
    // A second schema on the same instance does not inherit the first one's expressions.
    const other = ajv.compile({ type: 'string', pattern: '^x+$' });
    expect([other('xxx'), other('EUR')]).toEqual([true, false]);
  });
});
