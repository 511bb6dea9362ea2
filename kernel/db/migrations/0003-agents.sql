-- Schema changes of the agents work (empty when none were needed).
select 1;
