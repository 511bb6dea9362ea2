-- The model provider that served a run through Keel's model gateway (null: the tool's own
-- credentials). The usage such a run's tool reports is kept beside the run, not charged: the
-- gateway metered the provider's own answer.
alter table tool_runs add column gateway_provider_id uuid;
