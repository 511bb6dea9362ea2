/** Size caps of event ingestion (characters). */
export const INGEST_CAPS = {
  /** One issue's source file, truncation marker included. */
  perIssueSource: 12_000,
  /** One cursor window: the new material handed to the maintainer at once. */
  perCursorWindow: 60_000,
  /** All cursor windows handed to one run. */
  perRoutineRun: 120_000,
} as const;

export const TRUNCATION_MARKER = `\n\n[truncated: an ingested issue source is capped at ${INGEST_CAPS.perIssueSource.toLocaleString('en-US')} characters]\n`;
