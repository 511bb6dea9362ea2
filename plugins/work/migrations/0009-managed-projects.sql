-- Projects another plugin manages (the managed-project service, callers granted projects.managed):
-- the calling plugin's key and its name for the project. At most one per company, plugin and
-- key, so a repeated or concurrent call makes nothing twice.
alter table projects add column managed_by_plugin text, add column managed_key text;
alter table projects add constraint projects_managed_pair check ((managed_by_plugin is null) = (managed_key is null));
create unique index projects_managed_identity on projects (company_id, managed_by_plugin, managed_key) where managed_by_plugin is not null;
