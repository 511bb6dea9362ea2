/** `sdk/client`: a typed HTTP client for the Keel API (the plugin rows so far). */
export { KeelClient, KeelApiError, KeelConnectionError, type ClientOptions } from './keel-client.ts';
export type * from './types.ts';
