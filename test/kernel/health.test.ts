import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('GET /api/health', () => {
  it('answers 200 once the server is ready', async () => {
    const res = await t.api.get('/api/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', deploymentMode: 'local_trusted' });
  });

  it('answers unknown routes with the JSON error body', async () => {
    const res = await t.api.get('/api/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'No route for GET /api/does-not-exist', code: 'route_not_found' });
  });
});
