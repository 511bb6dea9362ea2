-- Schema changes of the auth-and-instance work (empty when none were needed).
select 1;
