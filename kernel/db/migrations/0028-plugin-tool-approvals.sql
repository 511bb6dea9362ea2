-- The tools of a plugin an operator approved, by tool key: the fingerprint (sha-256 of the
-- tool's key, description and input schema) with the description and schema it was taken of,
-- so that a change can be shown against what was approved. A tool description is an
-- instruction to a model: a tool that is new or changed since its approval is withheld from
-- agents until an instance admin approves it. Null until the first enable approves the set the
-- plugin had then (plugins enabled before this column existed are filled in at start).
alter table plugins add column approved_tools jsonb;
