/**
 * How every write begins: a plugin's connections are read-only by default (capabilities/database.ts),
 * so a transaction that writes says so. Its own module because the invocation, the batch and the
 * database capability all begin transactions with it.
 */
export const READ_WRITE = 'BEGIN READ WRITE';
