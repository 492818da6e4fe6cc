// @ts-check
import { ApiError, api, enc, stream } from './api.js';
import { Chart, chartData } from './chart.js';
import { h, replace, stateText, table, time } from './dom.js';

/**
 * One agent: its summary, the controls that go through the ordinary API, the events its actors
 * accept now (read from the machines by the server), the statecharts of its agent, continuation
 * and live task actors (lit from the Stately inspection stream), the reason chain, the event
 * stream, queue, work items, waits, timers and tasks with their output tails.
 *
 * Two live streams feed it: the agent's durable events (`/events/stream`, resumed by event_seq)
 * and the inspection events of its actors (`/inspection`). Every durable event schedules
 * a re-read of the summary and the bootstrap state.
 */
const EVENTS_SHOWN = 200;
const TRANSITIONS_SHOWN = 100;
const TASKS_SHOWN = 6;
const REFRESH_MS = 120;
const OUTPUT_POLL_MS = 1000;

/** @typedef {{ event_seq: number, ts: string, type: string, payload: any }} AgentEvent */

/** @param {unknown} error */
function message(error) {
  return error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
}

export class AgentView {
  /** @param {string} agentId */
  constructor(agentId) {
    this.agentId = agentId;
    this.base = `/api/agents/${enc(agentId)}`;
    this.control = `/api/control/agents/${enc(agentId)}`;
    this.controller = new AbortController();
    /** @type {any} */
    this.summary = null;
    /** @type {any} */
    this.accepts = null;
    /** @type {AgentEvent[]} newest first */
    this.events = [];
    /** @type {any[]} newest first */
    this.transitions = [];
    this.newestSeq = 0;
    /** @type {Map<string, Chart>} actor id → chart */
    this.charts = new Map();
    /** @type {Map<string, { name: string, value: unknown, status: string }>} inspection session id → actor */
    this.sessions = new Map();
    /** @type {Map<string, any>} task id → latest TaskRecord, most recent last */
    this.tasks = new Map();
    /** @type {Map<string, any>} task id → latest output */
    this.outputs = new Map();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.refreshTimer = null;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.outputTimer = null;

    this.header = h('div', { class: 'agent-header' });
    this.result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
    this.prompt = /** @type {HTMLTextAreaElement} */ (h('textarea', { name: 'prompt', rows: 2, placeholder: 'prompt the agent (scripted runner: /exec-wait echo hi)', 'aria-label': 'prompt' }));
    this.wakeReason = /** @type {HTMLInputElement} */ (h('input', { name: 'wake-reason', value: 'woken from the inspector', 'aria-label': 'wake reason' }));
    this.buttons = {
      prompt: /** @type {HTMLButtonElement} */ (h('button', { type: 'submit', 'data-action': 'prompt' }, 'Send prompt')),
      wake: /** @type {HTMLButtonElement} */ (h('button', { type: 'button', 'data-action': 'wake', onclick: () => this.act('wake') }, 'Wake')),
      stop: /** @type {HTMLButtonElement} */ (h('button', { type: 'button', 'data-action': 'stop', onclick: () => this.act('stop') }, 'Stop')),
      start: /** @type {HTMLButtonElement} */ (h('button', { type: 'button', 'data-action': 'start', onclick: () => this.act('start') }, 'Start')),
    };
    const form = h(
      'form',
      {
        class: 'controls',
        onsubmit: (event) => {
          event.preventDefault();
          void this.act('prompt');
        },
      },
      this.prompt,
      h('div', { class: 'buttons' }, this.buttons.prompt, this.wakeReason, this.buttons.wake, this.buttons.stop, this.buttons.start),
      this.result,
    );
    this.acceptsBox = h('div', { class: 'accepts' });
    this.chartsBox = h('div', { class: 'charts' });
    this.panels = {
      transitions: h('div', { class: 'panel-body' }),
      events: h('div', { class: 'panel-body events' }),
      queue: h('div', { class: 'panel-body' }),
      work: h('div', { class: 'panel-body' }),
      waits: h('div', { class: 'panel-body' }),
      timers: h('div', { class: 'panel-body' }),
      tasks: h('div', { class: 'panel-body' }),
    };
    /** @param {string} title @param {HTMLElement} body @param {string} key */
    const panel = (title, body, key) => h('section', { class: 'panel', 'data-panel': key }, h('h3', {}, title), body);
    this.element = h(
      'section',
      { class: 'agent-view', 'data-agent': agentId, 'aria-label': `agent ${agentId}` },
      this.header,
      form,
      this.chartsBox,
      h('section', { class: 'panel', 'data-panel': 'accepts' }, h('h3', {}, 'Events the current state accepts'), this.acceptsBox),
      h(
        'div',
        { class: 'grid' },
        panel('Tasks', this.panels.tasks, 'tasks'),
        panel('Reason chain (transitions)', this.panels.transitions, 'transitions'),
        panel('Event stream', this.panels.events, 'events'),
        panel('Queue', this.panels.queue, 'queue'),
        panel('Work items', this.panels.work, 'work'),
        panel('Waits', this.panels.waits, 'waits'),
        panel('Timers', this.panels.timers, 'timers'),
      ),
    );
  }

  /** Reads everything once, then follows both live streams until `close()`. */
  async open() {
    const signal = this.controller.signal;
    const [page] = await Promise.all([api(`${this.base}/events?order=desc&limit=${EVENTS_SHOWN}`, { signal }), this.refresh()]);
    this.events = page.events;
    this.newestSeq = page.newest_seq;
    this.transitions = this.events.filter((e) => e.type === 'transition_committed').map((e) => e.payload).slice(0, TRANSITIONS_SHOWN);
    for (const event of [...this.events].reverse()) this.noteTask(event);
    this.renderEvents();
    this.renderTransitions();
    await this.renderCharts();
    await this.follow();
    this.outputTimer = setInterval(() => void this.pollOutputs(), OUTPUT_POLL_MS);
    void this.pollOutputs();
  }

  close() {
    this.controller.abort();
    if (this.refreshTimer !== null) clearTimeout(this.refreshTimer);
    if (this.outputTimer !== null) clearInterval(this.outputTimer);
  }

  /**
   * Opens both live streams; resolves once both are open (the server watches the agent's actors
   * from then on) or have ended.
   */
  follow() {
    const signal = this.controller.signal;
    /** @param {string} path @param {(data: string) => void} onData */
    const open = (path, onData) =>
      new Promise((resolve) => {
        void stream(path, { signal, onOpen: () => resolve(undefined), onMessage: (m) => onData(m.data) })
          .catch(() => undefined)
          .finally(() => resolve(undefined));
      });
    return Promise.all([
      // Resumes after the newest event read: nothing is missed or shown twice between the read and the stream.
      open(`${this.base}/events/stream?after_seq=${this.newestSeq}`, (data) => this.onEvent(/** @type {AgentEvent} */ (JSON.parse(data)))),
      open(`${this.base}/inspection`, (data) => this.onInspection(JSON.parse(data))),
    ]).then(() => {
      if (!signal.aborted) this.element.dataset['streams'] = 'open';
    });
  }

  /** @param {AgentEvent} event */
  onEvent(event) {
    if (event.event_seq <= this.newestSeq) return;
    this.newestSeq = event.event_seq;
    this.events.unshift(event);
    if (this.events.length > EVENTS_SHOWN) this.events.length = EVENTS_SHOWN;
    if (event.type === 'transition_committed') {
      this.transitions.unshift(event.payload);
      if (this.transitions.length > TRANSITIONS_SHOWN) this.transitions.length = TRANSITIONS_SHOWN;
      this.renderTransitions();
    }
    this.noteTask(event);
    this.renderEvents();
    this.refreshSoon();
  }

  /** @param {AgentEvent} event */
  noteTask(event) {
    if (event.type !== 'task_status_changed' || typeof event.payload?.task_id !== 'string') return;
    const id = event.payload.task_id;
    const known = this.tasks.get(id) ?? { id, summary: event.payload.summary ?? '', kind: event.payload.kind ?? 'command' };
    this.tasks.delete(id);
    this.tasks.set(id, { ...known, status: event.payload.status, exit_code: event.payload.exit_code ?? known.exit_code ?? null });
    while (this.tasks.size > TASKS_SHOWN) this.tasks.delete(/** @type {string} */ (this.tasks.keys().next().value));
  }

  /**
   * A Stately inspection event: keeps each actor's state and lights its chart.
   * @param {any} m
   */
  onInspection(m) {
    if (m.type === '@xstate.actor') {
      const name = m.sessionId === m.rootId || m.name === this.agentId ? 'agent' : m.name;
      this.sessions.set(m.sessionId, { name, value: m.snapshot?.value, status: m.snapshot?.status ?? 'active' });
      void this.ensureChart(name).then((chart) => chart?.show(m.snapshot?.value, { status: m.snapshot?.status ?? 'active' }));
      return;
    }
    if (m.type !== '@xstate.snapshot') return;
    const actor = this.sessions.get(m.sessionId);
    if (!actor) return;
    actor.value = m.snapshot.value;
    actor.status = m.snapshot.status;
    void this.ensureChart(actor.name).then((chart) => chart?.show(m.snapshot.value, { event: m.event?.type ?? null, status: m.snapshot.status }));
  }

  /** @param {string} actor */
  machineOf(actor) {
    return actor === 'agent' ? 'agent' : actor === 'continuation' ? 'continuation' : 'task';
  }

  /**
   * The chart of an actor, made on first use.
   * @param {string} actor
   * @returns {Promise<Chart | null>}
   */
  async ensureChart(actor) {
    const existing = this.charts.get(actor);
    if (existing) return existing;
    const machine = this.machineOf(actor);
    const data = await chartData(machine).catch(() => null);
    if (!data || this.controller.signal.aborted) return null;
    const again = this.charts.get(actor);
    if (again) return again;
    const chart = new Chart(actor, machine, data);
    this.charts.set(actor, chart);
    this.placeCharts();
    return chart;
  }

  placeCharts() {
    const order = ['agent', 'continuation'];
    const tasks = [...this.charts.keys()].filter((id) => !order.includes(id));
    // Task charts: the live ones and the few most recent; the rest go.
    const live = new Set(Object.keys(this.summary?.statechart ?? {}));
    const keep = new Set([...tasks.filter((id) => live.has(id)), ...tasks.slice(-TASKS_SHOWN)]);
    for (const id of tasks) if (!keep.has(id)) this.charts.delete(id);
    replace(this.chartsBox, ...[...order, ...tasks.filter((id) => keep.has(id))].flatMap((id) => {
      const chart = this.charts.get(id);
      return chart ? [chart.element] : [];
    }));
  }

  /** The charts of the actors the summary lists, at their committed states (the inspection stream moves them on). */
  async renderCharts() {
    const chart = this.summary?.statechart ?? {};
    for (const [actor, value] of Object.entries(chart)) {
      const c = await this.ensureChart(actor);
      if (c && c.value === undefined) c.show(value, { immediate: true, status: this.summary.phase === 'sleeping' || this.summary.agent.status === 'stopped' ? 'stopped' : 'active' });
    }
    this.markLastTransition();
  }

  /** Marks the agent chart's last transition from the reason chain when the stream has not shown one. */
  markLastTransition() {
    const chart = this.charts.get('agent');
    const last = this.transitions[0];
    if (!chart || !last || chart.lastLabel) return;
    /** @param {string} path */
    const value = (path) => path.split('.').reduceRight((/** @type {unknown} */ inner, key) => (inner === null ? key : { [key]: inner }), null);
    chart.mark(value(last.from_state), value(last.to_state), null);
    chart.apply({ value: chart.value, event: null, status: chart.element.dataset['status'] ?? 'active' });
  }

  refreshSoon() {
    if (this.refreshTimer !== null) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.refresh().catch(() => undefined);
    }, REFRESH_MS);
  }

  async refresh() {
    const signal = this.controller.signal;
    const [state, accepts] = await Promise.all([api(`${this.base}/state`, { signal }), api(`/api/inspector/agents/${enc(this.agentId)}/accepts`, { signal })]);
    if (signal.aborted) return;
    this.summary = state.summary;
    this.accepts = accepts;
    for (const task of state.tasks) {
      this.tasks.delete(task.id);
      this.tasks.set(task.id, task);
    }
    this.renderHeader();
    this.renderAccepts();
    this.renderState(state);
    this.renderTasks();
    this.placeCharts();
  }

  renderHeader() {
    const s = this.summary;
    const posture = s.scheduling_posture;
    replace(
      this.header,
      h('h2', {}, s.identity.agent_id),
      h(
        'dl',
        {},
        h('dt', {}, 'status'),
        h('dd', {}, h('span', { class: `badge status-${s.agent.status}`, 'data-field': 'status' }, s.agent.status)),
        h('dt', {}, 'phase'),
        h('dd', { 'data-field': 'phase' }, s.phase),
        h('dt', {}, 'posture'),
        h('dd', { 'data-field': 'posture' }, `${posture.posture} (${posture.reason})`),
        h('dt', {}, 'pending'),
        h('dd', { 'data-field': 'pending' }, s.agent.pending),
        h('dt', {}, 'current run'),
        h('dd', { 'data-field': 'run' }, s.agent.current_run_id ?? '—'),
        h('dt', {}, 'version'),
        h('dd', {}, s.state_version),
        h('dt', {}, 'turns'),
        h('dd', {}, s.agent.turn_index),
      ),
      s.identity.mission ? h('p', { class: 'mission' }, s.identity.mission) : null,
      s.lifecycle.operator_hint ? h('p', { class: 'hint' }, s.lifecycle.operator_hint) : null,
    );
  }

  /** @param {string} actor @param {string} type */
  accepted(actor, type) {
    const found = this.accepts?.actors?.find((/** @type {any} */ a) => a.id === actor);
    return found?.accepts?.some((/** @type {any} */ e) => e.type === type) ?? false;
  }

  renderAccepts() {
    const s = this.summary;
    const open = s.lifecycle.accepts_external_messages;
    this.buttons.prompt.disabled = !open;
    this.buttons.wake.disabled = !open || !this.accepted('continuation', 'WAKE_HINT');
    this.buttons.stop.disabled = !this.accepted('agent', 'STOP');
    this.buttons.start.disabled = !this.accepted('agent', 'START');
    replace(
      this.acceptsBox,
      ...(this.accepts?.actors ?? []).map((/** @type {any} */ actor) =>
        h(
          'div',
          { class: 'actor-accepts', 'data-actor': actor.id },
          h('h4', {}, `${actor.id} · ${stateText(actor.state)}${actor.status === 'active' ? '' : ` (${actor.status})`}`),
          actor.accepts.length === 0
            ? h('p', { class: 'empty' }, 'accepts nothing')
            : h(
                'ul',
                {},
                ...actor.accepts.map((/** @type {any} */ e) =>
                  h(
                    'li',
                    { class: e.enabled ? 'enabled' : 'guarded', 'data-event': e.type, title: e.enabled ? 'taken now' : 'only with the facts its guard needs' },
                    h('code', {}, e.type),
                    ' ',
                    e.transitions.map((/** @type {any} */ t) => `${t.guard ? `[${t.guard}] ` : ''}→ ${t.targets.length ? t.targets.join(', ') : '(actions)'}`).join('; '),
                  ),
                ),
              ),
        ),
      ),
    );
  }

  /** @param {any} state */
  renderState(state) {
    replace(
      this.panels.queue,
      table(
        [
          ['id', (m) => m.id],
          ['kind', (m) => m.kind],
          ['priority', (m) => m.priority],
          ['status', (m) => m.status],
          ['text', (m) => (m.body?.type === 'text' ? m.body.text : JSON.stringify(m.body ?? null)).slice(0, 160)],
        ],
        state.queue,
        'the queue is empty',
      ),
    );
    replace(
      this.panels.work,
      table(
        [
          ['id', (w) => w.id],
          ['objective', (w) => w.objective ?? w.summary ?? ''],
          ['state', (w) => w.state],
          ['scheduling', (w) => `${w.scheduling?.scheduling_state ?? ''} (${w.scheduling?.reason_code ?? ''})`],
        ],
        state.work_items,
        'no work items',
      ),
    );
    replace(
      this.panels.waits,
      table(
        [
          ['id', (w) => w.id],
          ['kind', (w) => w.kind],
          ['waiting for', (w) => w.waiting_for ?? ''],
          ['subject', (w) => w.subject_ref ?? ''],
          ['status', (w) => w.status],
        ],
        state.waits,
        'no active waits',
      ),
    );
    replace(
      this.panels.timers,
      table(
        [
          ['id', (t) => t.id],
          ['status', (t) => t.status],
          ['next fire', (t) => time(t.next_fire_at)],
          ['fired', (t) => t.fire_count],
          ['summary', (t) => t.summary ?? ''],
        ],
        state.timers,
        'no timers',
      ),
    );
  }

  renderTransitions() {
    replace(
      this.panels.transitions,
      table(
        [
          ['#', (t) => t.seq],
          ['from → to', (t) => `${t.from_state} → ${t.to_state}`],
          ['reason', (t) => t.reason],
          ['trigger', (t) => t.trigger],
          ['phases', (t) => (t.phases ?? []).map((/** @type {any} */ p) => p.phase.replace(/^transition_/, '')).join(' › ') || '—'],
          ['evidence', (t) => (t.evidence_refs ?? []).join(', ') || '—'],
          ['at', (t) => time(t.committed_at)],
        ],
        this.transitions,
        'no transitions yet',
      ),
    );
  }

  renderEvents() {
    replace(
      this.panels.events,
      h(
        'ol',
        { reversed: true },
        ...this.events.map((e) =>
          h('li', { 'data-type': e.type }, h('span', { class: 'seq' }, `#${e.event_seq}`), ' ', h('span', { class: 'ts' }, time(e.ts)), ' ', h('code', {}, e.type), ' ', h('span', { class: 'payload' }, JSON.stringify(e.payload).slice(0, 240))),
        ),
      ),
    );
  }

  renderTasks() {
    const tasks = [...this.tasks.values()].reverse();
    replace(
      this.panels.tasks,
      tasks.length === 0
        ? h('p', { class: 'empty' }, 'no tasks')
        : h(
            'ul',
            { class: 'tasks' },
            ...tasks.map((task) => {
              const output = this.outputs.get(task.id);
              return h(
                'li',
                { 'data-task': task.id, 'data-status': task.status },
                h('div', {}, h('code', {}, task.id), ' ', h('span', { class: `badge task-${task.status}` }, task.status), ' ', task.summary ?? '', task.exit_code === null || task.exit_code === undefined ? '' : ` · exit ${task.exit_code}`),
                h('pre', { class: 'output', 'aria-label': `output of ${task.id}` }, output ? output.output_preview || '(no output yet)' : '…'),
              );
            }),
          ),
    );
  }

  /** Output tails of the tasks shown: re-read while they run, once more when they end. */
  async pollOutputs() {
    const signal = this.controller.signal;
    let changed = false;
    for (const task of this.tasks.values()) {
      const known = this.outputs.get(task.id);
      const finished = known && !['queued', 'running', 'cancelling'].includes(known.status);
      if (finished) continue;
      try {
        const output = await api(`${this.base}/tasks/${enc(task.id)}/output?max_bytes=4096`, { signal });
        if (!known || known.output_preview !== output.output_preview || known.status !== output.status) changed = true;
        this.outputs.set(task.id, output);
        if (output.status !== task.status) this.tasks.set(task.id, { ...task, status: output.status, exit_code: output.exit_code });
      } catch {
        if (signal.aborted) return;
      }
    }
    if (changed && !signal.aborted) this.renderTasks();
  }

  /** @param {'prompt' | 'wake' | 'stop' | 'start'} action */
  async act(action) {
    const body =
      action === 'prompt'
        ? { path: `${this.control}/prompt`, body: { text: this.prompt.value } }
        : action === 'wake'
          ? { path: `${this.control}/wake`, body: { reason: this.wakeReason.value || 'woken from the inspector', source: 'inspector' } }
          : { path: `${this.control}/control`, body: { action } };
    if (action === 'prompt' && this.prompt.value.trim() === '') {
      replace(this.result, 'write a prompt first');
      return;
    }
    try {
      const reply = await api(body.path, { method: 'POST', body: body.body });
      replace(this.result, action === 'prompt' ? `prompt queued as ${reply.message_id}` : action === 'wake' ? `wake: ${reply.disposition}` : `${action}: ${reply.agent?.agent?.status ?? 'ok'}`);
      if (action === 'prompt') this.prompt.value = '';
      this.result.className = 'result ok';
    } catch (error) {
      replace(this.result, message(error));
      this.result.className = 'result failed';
    }
    this.refreshSoon();
  }
}
