-- Agents a plugin manages (a manifest's managed.agents): made by the extension host for each
-- company while the plugin is enabled, never by the plugin's own code. The pair names the
-- plugin and the agent's key in its manifest; at most one agent per company, plugin and key,
-- which is what keeps provisioning idempotent across processes (insert ... on conflict do
-- nothing). A terminated managed agent keeps its row, so it is not made again.
alter table agents add column managed_by_plugin text, add column managed_key text;
alter table agents add constraint agents_managed_pair check ((managed_by_plugin is null) = (managed_key is null));
create unique index agents_managed_identity on agents (company_id, managed_by_plugin, managed_key) where managed_by_plugin is not null;
