/** `sdk/client`: a typed HTTP client for the Keel API (typed plugin calls, and get/post/patch/put/delete for every other route). */
export { KeelClient, KeelApiError, KeelConnectionError, withQuery, type ClientOptions, type RequestOptions } from './keel-client.ts';
export type * from './types.ts';
