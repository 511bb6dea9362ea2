import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

const ACME = '00000000-0000-4000-8000-000000000ace';
let host: TestHost;

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url), {
    kernel: {
      // As the real host does, the fake only answers for the company the call is for.
      'companies.get': ([id], invocation) => (id === ACME && invocation.companyId === ACME ? { id: ACME, name: 'Acme' } : null),
    },
  });
});
afterAll(() => host?.dispose());

describe('greeting-panel (sdk/testing)', () => {
  it('greets the company by name in its panel data', async () => {
    expect(await host.callData('greeting', null, { companyId: ACME })).toEqual({
      title: 'Hello, Acme!', lines: ['This panel is contributed by the greeting-panel plugin for Acme.'],
    });
    expect(host.kernel.calls.at(-1)).toMatchObject({ method: 'companies.get', args: [ACME], invocation: { kind: 'data', companyId: ACME } });
  });

  it('greets without a name outside a company, and uses the configured salutation', async () => {
    expect(await host.callData('greeting')).toEqual({ title: 'Hello!', lines: ['Open a company to be greeted by name.'] });
    host.setConfig({ salutation: 'Ahoy' });
    try {
      expect(await host.callData('greeting', null, { companyId: ACME })).toMatchObject({ title: 'Ahoy, Acme!' });
    } finally {
      host.setConfig({});
    }
    expect(host.config).toEqual({ salutation: 'Hello' });
  });

  it('waves from its launcher action, with the host activity entry', async () => {
    expect(await host.callAction('wave', { times: 2 }, { companyId: ACME })).toEqual({ message: '👋👋 from Acme' });
    expect(host.activity.at(-1)).toMatchObject({ action: 'plugin.greeting-panel.action.wave', entityType: 'plugin_action', companyId: ACME, byHost: true });
    await expect(host.callAction('wave')).rejects.toMatchObject({ status: 400, code: 'company_required' });
  });

  it('is not run without companies.read, which its code is typed for', async () => {
    const limited = await createTestHost(new URL('.', import.meta.url), { grants: ['ui.slots'] });
    try {
      await expect(limited.callData('greeting', null, { companyId: ACME })).rejects.toMatchObject({ status: 500, code: 'capability_not_granted' });
      expect(limited.kernel.calls).toEqual([]);
    } finally {
      limited.dispose();
    }
  });
});
