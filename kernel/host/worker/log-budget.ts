import type { SlotReport } from '../protocol/messages.ts';

type LogReport = Extract<SlotReport, { t: 'log' }>;

/**
 * A plugin's log lines, at most `perMinute` a minute: the rest are dropped and counted, and the
 * count is reported as one line when the next minute begins. Answers the reports to send.
 */
export class LogBudget {
  private readonly perMinute: number;
  private windowStart = Date.now();
  private lines = 0;
  private dropped = 0;

  constructor(perMinute: number) {
    this.perMinute = perMinute;
  }

  admit(line: LogReport): LogReport[] {
    const reports: LogReport[] = [];
    const now = Date.now();
    if (now - this.windowStart > 60_000) {
      if (this.dropped > 0) reports.push({ t: 'log', level: 'warn', message: `dropped ${this.dropped} log lines over the per-minute limit` });
      this.windowStart = now;
      this.lines = 0;
      this.dropped = 0;
    }
    if (++this.lines > this.perMinute) this.dropped++;
    else reports.push(line);
    return reports;
  }
}
