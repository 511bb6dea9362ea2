import { pino, type Logger } from 'pino';
import type { KeelConfig } from './config/schema.ts';

/**
 * Structured logs. Authorization headers, cookies and anything named like a secret are
 * redacted by pino before a line is written.
 */
export function createLogger(level: KeelConfig['logging']['level'], destination?: NodeJS.WritableStream): Logger {
  return pino({
    level,
    base: undefined,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.value', '*.secret', '*.apiKey', 'headers.authorization'],
      censor: '[REDACTED]',
    },
  }, destination as pino.DestinationStream | undefined);
}
