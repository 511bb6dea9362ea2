-- Issue-graph liveness recovery (src/liveness.ts) makes one escalation issue per finding: the
-- finding's key is the issue's origin_id, unique per company, so that a second run (or two
-- at once) never makes a second escalation for the same finding.
create unique index issues_liveness_escalation on issues (company_id, origin_id) where origin_kind = 'liveness_escalation';
