-- Delivery of shareable feedback traces to the instance's feedback-sharing endpoint (instance
-- setting general.feedbackDataSharingEndpoint), for companies that consented: a pending trace
-- becomes 'sent' once the endpoint accepted it, or 'failed' after its last attempt. Attempts,
-- the last error and when the next attempt is due are kept on the trace.
alter table feedback_traces drop constraint feedback_traces_status_check;
alter table feedback_traces add constraint feedback_traces_status_check check (status in ('local', 'pending', 'sent', 'failed'));
alter table feedback_traces
  add column delivery_attempts integer not null default 0,
  add column last_delivery_error text,
  add column next_delivery_at timestamptz,
  add column sent_at timestamptz;
-- The delivery's claim: a company's pending traces that are due, oldest first.
create index feedback_traces_delivery on feedback_traces (company_id, created_at, id) where status = 'pending';
