import { Writable } from 'node:stream';

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Fields every pino line has, or that the pretty line shows in its own place. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'req_id', 'method', 'url', 'route', 'status', 'duration_ms']);

function clock(time: unknown): string {
  const date = typeof time === 'number' ? new Date(time) : new Date();
  return date.toISOString().slice(11, 23);
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (value !== null && typeof value === 'object' && 'message' in value) {
    const err = value as { message?: unknown; stack?: unknown };
    return typeof err.stack === 'string' ? `\n    ${err.stack.replaceAll('\n', '\n    ')}` : String(err.message);
  }
  return JSON.stringify(value);
}

/** One pino record as one human line: `12:00:01.234 INFO  msg key=value ...`; a request line reads `POST /path 201 3.2 ms`. */
export function prettyLine(record: Record<string, unknown>): string {
  const level = (LEVELS[Number(record['level'])] ?? String(record['level'])).padEnd(5);
  const request =
    typeof record['method'] === 'string' && record['status'] !== undefined
      ? `${String(record['method'])} ${String(record['url'] ?? record['route'] ?? '')} ${String(record['status'])} ${String(record['duration_ms'])} ms`
      : null;
  const text = request ?? String(record['msg'] ?? '');
  const extra = Object.entries(record)
    .filter(([key]) => !SHOWN.has(key))
    .map(([key, value]) => `${key}=${valueText(value)}`);
  const id = typeof record['req_id'] === 'string' ? [`req=${record['req_id']}`] : [];
  return [`${clock(record['time'])} ${level} ${text}`, ...extra, ...id].join(' ');
}

/**
 * A stream for pino that writes each JSON record as one plain line to `out` (the `--log-format
 * pretty` mode). A line that is not JSON is passed through as is.
 */
export function prettyStream(out: NodeJS.WritableStream): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.length > 0) {
          let record: unknown;
          try {
            record = JSON.parse(line);
          } catch {
            record = null;
          }
          out.write(`${record !== null && typeof record === 'object' ? prettyLine(record as Record<string, unknown>) : line}\n`);
        }
        newline = pending.indexOf('\n');
      }
      done();
    },
  });
}
