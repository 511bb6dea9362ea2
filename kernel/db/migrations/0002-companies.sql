-- Schema changes of the companies work (empty when none were needed).
select 1;
