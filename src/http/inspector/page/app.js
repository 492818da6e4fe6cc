// @ts-check
import { AgentList } from './agent-list.js';
import { AgentView } from './agent-view.js';
import { api, connection, hasToken, setToken } from './api.js';
import { h, replace, time } from './dom.js';

/**
 * The inspector's shell: the node's health (the seed-002 split of `/readyz`), the agent list,
 * the selected agent (`#/agents/<id>` in the address: an id, never a token), the bearer token
 * prompt, and the banner that says when the page is not live. While the server cannot be
 * reached everything shown is marked stale (`data-live="false"`) and the controls are disabled;
 * when it answers again everything is read anew.
 */
const HEALTH_MS = 5000;

const banner = h('div', { class: 'banner', role: 'alert', hidden: true });
const health = h('div', { class: 'health', 'aria-label': 'node health' }, 'reading /readyz…');
const mode = h('span', { class: 'mode' });
const main = h('main');
const detail = h('div', { class: 'detail' }, h('p', { class: 'empty' }, 'Select an agent.'));
/** @type {AgentView | null} */
let view = null;
const list = new AgentList((id) => {
  location.hash = `#/agents/${encodeURIComponent(id)}`;
});

function setLive() {
  const live = connection.state === 'live';
  document.body.dataset['live'] = String(live);
  banner.hidden = live;
  if (connection.state === 'down') replace(banner, `Cannot reach the server since ${time(connection.since)} (${connection.reason}). What you see is what it said then — not live. Retrying…`);
  if (connection.state === 'unauthorized') replace(banner, 'The server refused the token. Enter it again.');
}

async function readHealth() {
  try {
    const response = await fetch('/readyz', { cache: 'no-store' });
    const body = await response.json();
    const r = response.ok ? body : body?.error?.details?.readiness;
    if (!r) throw new Error('no readiness');
    const item = (/** @type {string} */ name, /** @type {boolean} */ ok, /** @type {string} */ text) => h('span', { class: `check ${ok ? 'ok' : 'bad'}`, 'data-check': name }, `${name}: ${text}`);
    replace(
      health,
      item('process', true, `pid ${r.process.pid}, up ${r.process.uptime_s}s`),
      item('lease', r.lease.held, r.lease.held ? `held by ${r.lease.holder}` : `not held (${r.lease.holder ?? 'nobody'})`),
      ...Object.entries(r.dependencies).map(([name, dep]) => item(name, /** @type {any} */ (dep).ok, `${/** @type {any} */ (dep).kind ?? ''} ${/** @type {any} */ (dep).ok ? 'ok' : 'unreachable'}`)),
      item('progress', r.progress.stalled_agents.length === 0, `last commit ${time(r.progress.last_commit_at)}, ${r.progress.stalled_agents.length} stalled`),
    );
    if (connection.state === 'down') connection.set('live');
  } catch {
    connection.down('the server cannot be reached');
  }
}

function askToken() {
  const input = /** @type {HTMLInputElement} */ (h('input', { type: 'password', name: 'token', autocomplete: 'off', 'aria-label': 'control token', required: true }));
  const dialog = h(
    'form',
    {
      class: 'token-dialog',
      onsubmit: (event) => {
        event.preventDefault();
        setToken(input.value);
        dialog.remove();
        // From `unauthorized`, going live restarts the page; otherwise start it here.
        if (connection.state === 'live') void start();
        else connection.set('live');
      },
    },
    h('h2', {}, 'This server wants its control token'),
    h('p', {}, 'It is kept in this tab only (sessionStorage), sent as an Authorization header, never put in a URL.'),
    input,
    h('button', { type: 'submit' }, 'Connect'),
  );
  replace(main, dialog);
  input.focus();
}

async function showAgent() {
  const match = /^#\/agents\/(.+)$/.exec(location.hash);
  const id = match ? decodeURIComponent(match[1] ?? '') : null;
  if (view && view.agentId === id) return;
  view?.close();
  view = null;
  list.select(id);
  if (!id) {
    replace(detail, h('p', { class: 'empty' }, 'Select an agent.'));
    return;
  }
  const next = new AgentView(id);
  view = next;
  replace(detail, h('p', { class: 'empty' }, `opening ${id}…`));
  try {
    await next.open();
    if (view === next) replace(detail, next.element);
  } catch (error) {
    if (view === next) replace(detail, h('p', { class: 'failed' }, `cannot open ${id}: ${error instanceof Error ? error.message : String(error)}`));
  }
}

async function start() {
  replace(main, h('aside', {}, list.element), detail);
  await list.first();
  list.follow();
  await showAgent();
}

async function boot() {
  document.body.append(
    h('header', {}, h('h1', {}, 'holon-xstate inspector'), mode, health),
    banner,
    main,
  );
  connection.onChange((state) => {
    setLive();
    if (state === 'unauthorized') {
      setToken(null);
      list.stop();
      view?.close();
      view = null;
      askToken();
    }
    if (state === 'live') {
      // Back: everything is read anew, the streams reopen.
      const current = view;
      view = null;
      current?.close();
      void start().catch(() => undefined);
    }
  });
  setLive();
  window.addEventListener('hashchange', () => void showAgent());
  setInterval(() => void readHealth(), HEALTH_MS);
  void readHealth();
  try {
    const handshake = await api('/handshake');
    replace(mode, `${handshake.runtime.node_id} · ${handshake.runtime.store} · ${handshake.auth.mode} mode`);
    if (handshake.auth.mode === 'bearer' && !hasToken()) {
      askToken();
      return;
    }
    await start();
  } catch {
    // connection.down() is set by api(); the probe restarts the page when the server is back.
  }
}

void boot();
