// @ts-check
/**
 * The page's only way to the server: JSON requests and fetch-based SSE streams (EventSource
 * cannot send an Authorization header), both with the bearer token in bearer mode. The token is
 * kept in memory and in this tab's sessionStorage only: never in a URL, a cookie or a log line.
 *
 * `connection` tracks whether the server is reachable: any request or stream that fails for the
 * network (or a 503) marks it down, and the page then shows that it is not live; it probes
 * `/healthz` until the server answers, then tells its listeners to reload everything.
 */

const TOKEN_KEY = 'holon-inspector-token';
/** A stream with no byte (events or the server's 15 s heartbeat comments) for this long is dead. */
const STREAM_IDLE_MS = 40_000;

/** @type {string | null} */
let token = sessionStorage.getItem(TOKEN_KEY);

export function hasToken() {
  return token !== null;
}

/** @param {string | null} value */
export function setToken(value) {
  token = value;
  if (value === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** @typedef {'live' | 'down' | 'unauthorized'} ConnectionState */

class Connection {
  constructor() {
    /** @type {ConnectionState} */
    this.state = 'live';
    /** @type {string | null} */
    this.since = null;
    /** @type {string} */
    this.reason = '';
    /** @type {Set<(state: ConnectionState) => void>} */
    this.listeners = new Set();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.probe = null;
  }

  /** @param {(state: ConnectionState) => void} listener */
  onChange(listener) {
    this.listeners.add(listener);
  }

  /** @param {ConnectionState} state */
  set(state) {
    if (this.state === state) return;
    this.state = state;
    for (const listener of this.listeners) listener(state);
  }

  /** @param {string} reason */
  down(reason) {
    if (this.state !== 'down') {
      this.since = new Date().toISOString();
      this.reason = reason;
    }
    this.set('down');
    this.scheduleProbe();
  }

  unauthorized() {
    this.set('unauthorized');
  }

  scheduleProbe() {
    if (this.probe !== null) return;
    this.probe = setTimeout(async () => {
      this.probe = null;
      try {
        const response = await fetch('/healthz', { cache: 'no-store' });
        if (response.ok) {
          this.set('live');
          return;
        }
      } catch {
        // still down
      }
      this.scheduleProbe();
    }, 1500);
  }
}

export const connection = new Connection();

/** @param {Record<string, string>} [extra] */
function headers(extra = {}) {
  return token === null ? extra : { ...extra, authorization: `Bearer ${token}` };
}

/**
 * @param {Response} response
 * @returns {Promise<never>}
 */
async function fail(response) {
  let code = 'http_' + response.status;
  let message = response.statusText;
  try {
    const body = await response.json();
    code = body?.error?.code ?? code;
    message = body?.error?.message ?? message;
  } catch {
    // not the envelope
  }
  if (response.status === 401) connection.unauthorized();
  if (response.status === 503) connection.down(message);
  throw new ApiError(response.status, code, message);
}

/**
 * A JSON request to the API.
 * @param {string} path
 * @param {{ method?: string, body?: unknown, signal?: AbortSignal }} [options]
 * @returns {Promise<any>}
 */
export async function api(path, options = {}) {
  /** @type {Response} */
  let response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers: headers(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      cache: 'no-store',
      signal: options.signal,
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    connection.down('the server cannot be reached');
    throw new ApiError(0, 'unreachable', 'the server cannot be reached');
  }
  if (!response.ok) return fail(response);
  if (connection.state !== 'live' && connection.state !== 'unauthorized') connection.set('live');
  return response.status === 204 ? null : response.json();
}

/**
 * Reads an SSE stream with fetch until `signal` aborts. Resolves when the stream ends for any
 * reason other than the abort (the caller decides whether to reopen); rejects on HTTP errors.
 * @param {string} path
 * @param {{ signal: AbortSignal, onOpen?: () => void, onMessage: (message: { id: string | null, event: string | null, data: string }) => void }} options
 */
export async function stream(path, options) {
  /** @type {Response} */
  let response;
  try {
    response = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), cache: 'no-store', signal: options.signal });
  } catch (error) {
    if (options.signal.aborted) return;
    connection.down('the server cannot be reached');
    return;
  }
  if (!response.ok) return fail(response);
  if (!response.body) return;
  options.onOpen?.();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  /** @type {ReturnType<typeof setTimeout> | null} */
  let idle = null;
  const watchdog = () => {
    if (idle !== null) clearTimeout(idle);
    idle = setTimeout(() => void reader.cancel('idle'), STREAM_IDLE_MS);
  };
  try {
    watchdog();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      watchdog();
      buffer += decoder.decode(value, { stream: true });
      let boundary;
      while ((boundary = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const message = parse(block);
        if (message) options.onMessage(message);
      }
    }
  } catch {
    // read failed: the connection is gone
  } finally {
    if (idle !== null) clearTimeout(idle);
  }
  if (!options.signal.aborted) connection.down('a live stream from the server ended');
}

/** @param {string} block */
function parse(block) {
  /** @type {string | null} */
  let id = null;
  /** @type {string | null} */
  let event = null;
  /** @type {string[]} */
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':') || line === '') continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? null : { id, event, data: data.join('\n') };
}

/** @param {string} value */
export function enc(value) {
  return encodeURIComponent(value);
}
