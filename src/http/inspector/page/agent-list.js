// @ts-check
import { api, stream } from './api.js';
import { h, replace } from './dom.js';

/**
 * The agents, live: one page of the roster at a time (`GET /api/agents/list`, cursor paging and
 * the server-side `q` / `status` filters, so 100,000 agents cost one page), refreshed while the
 * cross-agent event stream says something changed (at most once per `REFRESH_MS`).
 */
const PAGE_SIZE = 50;
const REFRESH_MS = 500;
const STATUSES = ['', 'booting', 'awake_idle', 'awake_running', 'awaiting_task', 'asleep', 'stopped'];

export class AgentList {
  /** @param {(agentId: string) => void} open */
  constructor(open) {
    this.open = open;
    /** @type {Array<string | undefined>} cursors of the pages before this one */
    this.back = [];
    /** @type {string | undefined} */
    this.cursor = undefined;
    /** @type {string | null} */
    this.nextCursor = null;
    /** @type {string | null} */
    this.selected = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.refreshTimer = null;
    /** @type {AbortController | null} */
    this.live = null;
    this.loaded = false;

    this.search = /** @type {HTMLInputElement} */ (h('input', { type: 'search', name: 'q', placeholder: 'search agent ids', 'aria-label': 'search agent ids', autocomplete: 'off' }));
    this.status = /** @type {HTMLSelectElement} */ (h('select', { name: 'status', 'aria-label': 'status filter' }, ...STATUSES.map((s) => h('option', { value: s }, s === '' ? 'any status' : s))));
    let debounce = /** @type {ReturnType<typeof setTimeout> | null} */ (null);
    const restart = () => {
      if (debounce !== null) clearTimeout(debounce);
      debounce = setTimeout(() => this.first(), 200);
    };
    this.search.addEventListener('input', restart);
    this.status.addEventListener('change', () => this.first());
    this.prev = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', onclick: () => this.previous() }, '‹ prev'));
    this.nextButton = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', onclick: () => this.next() }, 'next ›'));
    this.position = h('span', { class: 'position' }, '');
    this.body = h('tbody');
    this.element = h(
      'section',
      { class: 'agent-list', 'aria-label': 'agents' },
      h('h2', {}, 'Agents'),
      h('div', { class: 'filters' }, this.search, this.status),
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, ...['agent', 'status', 'phase', 'posture', 'pending', 'run'].map((c) => h('th', {}, c)))),
        this.body,
      ),
      h('div', { class: 'pager' }, this.prev, this.position, this.nextButton),
    );
  }

  query() {
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (this.cursor !== undefined) params.set('cursor', this.cursor);
    const q = this.search.value.trim();
    if (q) params.set('q', q);
    if (this.status.value) params.set('status', this.status.value);
    return `/api/agents/list?${params}`;
  }

  first() {
    this.back = [];
    this.cursor = undefined;
    return this.load();
  }

  next() {
    if (this.nextCursor === null) return;
    this.back.push(this.cursor);
    this.cursor = this.nextCursor;
    void this.load();
  }

  previous() {
    if (this.back.length === 0) return;
    this.cursor = this.back.pop();
    void this.load();
  }

  async load() {
    const page = await api(this.query());
    this.nextCursor = page.next_cursor;
    this.render(page.items);
    this.loaded = true;
    if (!performance.getEntriesByName('inspector:agents-listed').length) performance.mark('inspector:agents-listed');
  }

  /** @param {Array<{ agent_id: string, status: string, phase: string, scheduling_posture: { posture: string }, pending: number, current_run_id: string | null }>} items */
  render(items) {
    const rows = items.map((item) =>
      h(
        'tr',
        {
          'data-agent': item.agent_id,
          class: item.agent_id === this.selected ? 'selected' : null,
          tabindex: 0,
          onclick: () => this.open(item.agent_id),
          onkeydown: (event) => {
            if (/** @type {KeyboardEvent} */ (event).key === 'Enter') this.open(item.agent_id);
          },
        },
        h('td', { class: 'id' }, item.agent_id),
        h('td', {}, h('span', { class: `badge status-${item.status}` }, item.status)),
        h('td', {}, item.phase),
        h('td', {}, item.scheduling_posture.posture),
        h('td', { class: 'num' }, item.pending),
        h('td', { class: 'run' }, item.current_run_id ?? '—'),
      ),
    );
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, this.search.value || this.status.value ? 'no agent matches' : 'no agents yet')));
    replace(this.body, ...rows);
    this.prev.disabled = this.back.length === 0;
    this.nextButton.disabled = this.nextCursor === null;
    replace(this.position, `page ${this.back.length + 1}`);
  }

  /** @param {string | null} agentId */
  select(agentId) {
    this.selected = agentId;
    for (const row of this.body.querySelectorAll('tr[data-agent]')) row.classList.toggle('selected', row.getAttribute('data-agent') === agentId);
  }

  refreshSoon() {
    if (this.refreshTimer !== null) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.load().catch(() => undefined);
    }, REFRESH_MS);
  }

  /** Follows the cross-agent event stream until `stop()`; every event schedules a refresh of this page. */
  follow() {
    this.stop();
    const controller = new AbortController();
    this.live = controller;
    void stream('/api/events/stream', { signal: controller.signal, onMessage: () => this.refreshSoon() }).catch(() => undefined);
  }

  stop() {
    this.live?.abort();
    this.live = null;
  }
}
