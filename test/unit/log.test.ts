/**
 * The functions' log (lib/log.ts): one JSON object a line. The stack's metric filter reads the
 * stream consumer's line (infra/constructs/alarms.ts), and A4 keeps keys out of every line.
 */
import { describe, expect, it } from 'vitest';
import { deadLetterLogLine } from '../../infra/constructs/alarms.js';
import { createLog, type LogSink } from '../../lib/log.js';

function sink(): LogSink & { out: (l: string) => void; lines: { to: 'out' | 'err'; entry: Record<string, unknown> }[] } {
  const lines: { to: 'out' | 'err'; entry: Record<string, unknown> }[] = [];
  const take = (to: 'out' | 'err') => (line: string) => {
    // One line each, newline-terminated, nothing else on it.
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    lines.push({ to, entry: JSON.parse(line) as Record<string, unknown> });
  };
  return { out: take('out'), err: take('err'), lines };
}

describe('the functions’ log', () => {
  it('writes the stream consumer’s dead-letter line as the metric filter reads it', () => {
    const s = sink();
    createLog('sluice-stream', { sink: s, env: {} }).info('dead-lettered', { metric: 'DeadLettered', count: 3 });
    expect(s.lines).toHaveLength(1);
    const { to, entry } = s.lines[0]!;
    expect(to).toBe('out');
    expect(entry[deadLetterLogLine.field]).toBe(deadLetterLogLine.value);
    expect(entry[deadLetterLogLine.countField]).toBe(3);
    expect(entry).toMatchObject({ level: 'INFO', message: 'dead-lettered', service: 'sluice-stream' });
    expect(Number.isNaN(Date.parse(String(entry.timestamp)))).toBe(false);
  });

  it('A4: logs an error’s name, message, stack, cause and request metadata, never the item it carries', () => {
    const s = sink();
    const cause = new Error('inner');
    const error = Object.assign(new Error('refused', { cause }), {
      name: 'ConditionalCheckFailedException',
      $metadata: { httpStatusCode: 400, requestId: 'R7', extendedRequestId: 'x' },
      Item: { pk: 'auth', primaryKey: 'SECRET-KEY' },
    });
    const log = createLog('sluice-api', { sink: s, env: {} });
    log.error('unhandled', error);
    log.warn('hints failed', { error });
    expect(s.lines.map((l) => l.to)).toEqual(['err', 'err']);
    for (const { entry } of s.lines) {
      expect(entry.error).toMatchObject({
        name: 'ConditionalCheckFailedException',
        message: 'refused',
        $metadata: { httpStatusCode: 400, requestId: 'R7' },
        cause: { name: 'Error', message: 'inner' },
      });
      expect(String((entry.error as { stack?: string }).stack)).toContain('refused');
      expect(JSON.stringify(entry)).not.toContain('SECRET-KEY');
    }
  });

  it('logs a thrown value that is no Error by its type only', () => {
    const s = sink();
    createLog('sluice-api', { sink: s, env: {} }).error('unhandled', { primaryKey: 'SECRET-KEY' });
    expect(s.lines[0]!.entry.error).toMatchObject({ message: 'non-error thrown: object' });
    expect(JSON.stringify(s.lines)).not.toContain('SECRET-KEY');
  });

  it('drops what is below the level Lambda’s log-level setting or LOG_LEVEL names; INFO by default', () => {
    const lines = (env: NodeJS.ProcessEnv) => {
      const s = sink();
      const log = createLog('sluice-api', { sink: s, env });
      log.info('i');
      log.warn('w');
      log.error('e', new Error('x'));
      return s.lines.map((l) => l.entry.level);
    };
    expect(lines({})).toEqual(['INFO', 'WARN', 'ERROR']);
    expect(lines({ AWS_LAMBDA_LOG_LEVEL: 'WARN' })).toEqual(['WARN', 'ERROR']);
    expect(lines({ LOG_LEVEL: 'error' })).toEqual(['ERROR']);
    expect(lines({ AWS_LAMBDA_LOG_LEVEL: 'DEBUG', LOG_LEVEL: 'ERROR' })).toEqual(['INFO', 'WARN', 'ERROR']);
  });
});
