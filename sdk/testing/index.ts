/**
 * `sdk/testing`: run a plugin against an in-memory host in unit tests, with no PostgreSQL and
 * no kernel. The bundle is built with sdk/build and runs in a real isolate behind the same
 * bridge the extension host uses; capabilities are fakes the test controls. See README.md.
 */
export { createTestHost, TestHost, type TestHostOptions, type CallOptions, type RouteCall, type WebhookCall } from './test-host.ts';
export type { RouteAnswer } from './contributions.ts';
export type { RecordedActivity } from './capabilities.ts';
export type { LogLine } from './isolate-runner.ts';
export { FakeDatabase, dbError, type QueryHandler, type FakeQuery, type QueryAnswer } from './fake-database.ts';
export { FakeHttp, type FakeRequest, type FakeResponse, type FakeResponder } from './fake-http.ts';
export { FakeFolders } from './fake-folders.ts';
export { FakeKernel, type KernelMethod, type KernelFake } from './fake-kernel.ts';
export { PluginCallError } from './errors.ts';
export { InvalidManifestError } from '../build/validate-manifest.ts';
