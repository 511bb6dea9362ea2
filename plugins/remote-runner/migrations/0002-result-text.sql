-- The text a remote run streamed so far (`run.text` and `message.delta` deltas), kept beside
-- what was metered: it becomes the run's result when the run completes without an explicit
-- one. Kept here, not in a process, since several Keel processes share the run's events.
-- Bounded to 64 KiB of UTF-8 (result_text_truncated says the rest was left out);
-- text_seq is the last output whose text was appended, so a redelivered batch adds nothing.
alter table metered
  add column result_text text not null default '',
  add column result_text_truncated boolean not null default false,
  add column text_seq bigint not null default 0;
