-- The summarizer is now the built-in agent the host manages for each company (manifest
-- managed.agents, key summarizer), found through ctx.agents.getManaged: the board no longer
-- designates an agent, so the designation table goes.
drop table summarizers;
