import { loggableError } from './loggable.js';

/**
 * The functions' log: one JSON object a line, `level`, `message`, `service`, `timestamp` and
 * the caller's fields, on stdout (warnings and errors on stderr), which Lambda sends to the
 * function's log group as they are. The stack's metric filter reads those fields
 * (infra/constructs/alarms.ts), so the shape is part of the deployment. Every Error among the
 * fields is reduced to what may be logged (`loggableError`, A4). The level comes from Lambda's
 * log-level setting (`AWS_LAMBDA_LOG_LEVEL`) or `LOG_LEVEL`; INFO by default.
 */
export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, error?: unknown, fields?: Record<string, unknown>): void;
}

const levels = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 } as const;
type Level = keyof typeof levels;

function thresholdOf(env: NodeJS.ProcessEnv): number {
  const named = (env.AWS_LAMBDA_LOG_LEVEL ?? env.LOG_LEVEL ?? '').toUpperCase();
  if (named === 'TRACE') return levels.DEBUG;
  if (named === 'FATAL') return levels.ERROR;
  return named in levels ? levels[named as Level] : levels.INFO;
}

/** An Error as a plain object JSON can carry (an Error's own fields are not enumerable). */
function errorFields(error: unknown): Record<string, unknown> {
  const safe = loggableError(error);
  const out: Record<string, unknown> = { name: safe.name, message: safe.message, ...(safe.stack === undefined ? {} : { stack: safe.stack }) };
  const metadata = (safe as { $metadata?: unknown }).$metadata;
  if (metadata !== undefined) out.$metadata = metadata;
  if (safe.cause !== undefined) out.cause = errorFields(safe.cause);
  return out;
}

const plain = (fields: Record<string, unknown>) => Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v instanceof Error ? errorFields(v) : v]));

export interface LogSink {
  out(line: string): void;
  err(line: string): void;
}

const processSink: LogSink = { out: (line) => process.stdout.write(line), err: (line) => process.stderr.write(line) };

/** A log for the function `service`; `sink` and `env` for tests. */
export function createLog(service: string, options: { sink?: LogSink; env?: NodeJS.ProcessEnv } = {}): Log {
  const sink = options.sink ?? processSink;
  const threshold = thresholdOf(options.env ?? process.env);
  const write = (level: Level, message: string, fields: Record<string, unknown>) => {
    if (levels[level] < threshold) return;
    const line = `${JSON.stringify({ level, message, service, timestamp: new Date().toISOString(), ...plain(fields) })}\n`;
    if (level === 'WARN' || level === 'ERROR') sink.err(line);
    else sink.out(line);
  };
  return {
    info: (message, fields = {}) => write('INFO', message, fields),
    warn: (message, fields = {}) => write('WARN', message, fields),
    error: (message, error, fields = {}) => write('ERROR', message, error === undefined ? fields : { ...fields, error: loggableError(error) }),
  };
}
