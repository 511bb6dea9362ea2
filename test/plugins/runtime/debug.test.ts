import { join } from 'node:path';
import { afterAll, beforeAll, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { agentScripts, processAgent, wakeOk } from './helpers.ts';
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });
it('debug', async () => {
  const scripts = await agentScripts();
  const company = await createCompany(t.api);
  const agent = await processAgent(t.api, company.id, join(scripts, 'fail.cjs'));
  const w = await wakeOk(t.api, agent.id);
  await new Promise((r) => setTimeout(r, 6000));
  console.log(JSON.stringify((await t.api.get(`/api/heartbeat-runs/${w.run.id}`)).body));
  console.log(JSON.stringify((await t.sql.query("select o.name, d.state, d.attempts, d.last_error from keel_events.deliveries d join keel_events.outbox o on o.seq = d.event_seq where d.subscriber = 'runtime'")).rows).slice(0, 4000));
}, 60000);
