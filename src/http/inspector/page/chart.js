// @ts-check
import { api } from './api.js';
import { h, stateText } from './dom.js';

/**
 * One actor's statechart: the machine's drawing (the SVG `npm run visualize` generates from its
 * definition, guard names on the edges), the current state lit and the last transition marked.
 *
 * Changes play at a readable pace: each state stays lit at least `HOLD_MS`, so a state an actor
 * passes through in a millisecond (awakeRunning in a scripted turn) is still seen; a snapshot
 * that changes neither state nor status is not a change; a chart that falls more than
 * `MAX_BEHIND` changes behind jumps to the newest.
 */
const HOLD_MS = 200;
const MAX_BEHIND = 40;

/** @typedef {{ name: string, svg: string, states: Record<string, string>, edges: Array<{ source: string, target: string, event: string, guard: string | null, label: string }> }} ChartData */

/** @type {Map<string, Promise<ChartData>>} */
const charts = new Map();

/** @param {string} machine */
export function chartData(machine) {
  let data = charts.get(machine);
  if (!data) {
    data = api(`/api/inspector/charts/${encodeURIComponent(machine)}`);
    data.catch(() => charts.delete(machine));
    charts.set(machine, data);
  }
  return data;
}

/**
 * Dotted paths of the active state nodes of a state value, the root (`''`) included.
 * @param {unknown} value
 * @returns {string[]}
 */
export function activePaths(value) {
  /** @type {string[]} */
  const out = [''];
  /** @param {unknown} v @param {string} prefix */
  const walk = (v, prefix) => {
    if (typeof v === 'string') {
      out.push(prefix ? `${prefix}.${v}` : v);
      return;
    }
    if (v && typeof v === 'object') {
      for (const [key, child] of Object.entries(v)) {
        const path = prefix ? `${prefix}.${key}` : key;
        out.push(path);
        walk(child, path);
      }
    }
  };
  walk(value, '');
  return out;
}

/** @param {Element} group */
function titleOf(group) {
  return group.querySelector(':scope > title')?.textContent ?? '';
}

export class Chart {
  /**
   * @param {string} actor the actor's id (`agent`, `continuation`, a task id)
   * @param {string} machine
   * @param {ChartData} data
   */
  constructor(actor, machine, data) {
    this.actor = actor;
    this.machine = machine;
    this.data = data;
    /** @type {unknown} */
    this.value = undefined;
    /** @type {Array<{ value: unknown, event: string | null, status: string }>} */
    this.pending = [];
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** The label of the last transition marked. */
    this.lastLabel = '';
    const doc = new DOMParser().parseFromString(data.svg, 'image/svg+xml');
    const svg = /** @type {Element} */ (document.importNode(doc.documentElement, true));
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', `${machine} statechart`);
    this.svg = svg;
    /** @type {Map<string, Element>} diagram name → node group or cluster group */
    this.nodes = new Map();
    for (const group of svg.querySelectorAll('g.node, g.cluster')) {
      const title = titleOf(group);
      this.nodes.set(group.classList.contains('cluster') ? title.replace(/^cluster_/, '') : title, group);
    }
    this.caption = h('figcaption', {}, '');
    this.drawing = h('div', { class: 'drawing' }, svg);
    this.element = h('figure', { class: 'chart', 'data-actor': actor, 'data-machine': machine, 'data-status': 'active' }, this.drawing, this.caption);
  }

  /** Scrolls a drawing wider than its box so the lit state is in the middle. */
  center() {
    const lit = [...this.svg.querySelectorAll('g.node.current')].at(-1);
    if (!lit) return;
    const box = this.drawing.getBoundingClientRect();
    const node = lit.getBoundingClientRect();
    if (box.width === 0) return;
    this.drawing.scrollLeft += node.left + node.width / 2 - (box.left + box.width / 2);
    this.drawing.scrollTop += node.top + node.height / 2 - (box.top + box.height / 2);
  }

  /**
   * Queues a state to show. `event` is the event type that led to it when known.
   * @param {unknown} value
   * @param {{ event?: string | null, status?: string, immediate?: boolean }} [options]
   */
  show(value, options = {}) {
    const change = { value, event: options.event ?? null, status: options.status ?? 'active' };
    const latest = this.pending.at(-1) ?? (this.value === undefined ? undefined : { value: this.value, status: this.element.dataset['status'] });
    if (!options.immediate && latest && latest.status === change.status && JSON.stringify(latest.value) === JSON.stringify(change.value)) return;
    if (options.immediate || this.pending.length >= MAX_BEHIND) {
      this.pending = [];
      this.apply(change);
      return;
    }
    this.pending.push(change);
    if (this.timer === null) this.next();
  }

  next() {
    const change = this.pending.shift();
    if (!change) {
      this.timer = null;
      return;
    }
    this.apply(change);
    this.timer = setTimeout(() => this.next(), HOLD_MS);
  }

  /** @param {{ value: unknown, event: string | null, status: string }} change */
  apply(change) {
    const previous = this.value;
    this.value = change.value;
    this.element.dataset['status'] = change.status;
    this.element.dataset['state'] = JSON.stringify(change.value ?? null);
    const now = new Set(activePaths(change.value).map((path) => this.data.states[path]).filter((name) => name !== undefined));
    for (const [name, group] of this.nodes) group.classList.toggle('current', now.has(name));
    requestAnimationFrame(() => this.center());
    const changed = previous !== undefined && JSON.stringify(previous) !== JSON.stringify(change.value);
    if (changed) this.mark(previous, change.value, change.event);
    this.caption.textContent = `${this.actor} · ${stateText(change.value)}${change.status === 'active' ? '' : ` · ${change.status}`}${this.lastLabel ? ` · last: ${this.lastLabel}` : ''}`;
  }

  /**
   * Marks the edges of the transition from `from` to `to` (taken on `event`, when known).
   * @param {unknown} from
   * @param {unknown} to
   * @param {string | null} event
   */
  mark(from, to, event) {
    const before = new Set(activePaths(from).map((path) => this.data.states[path]));
    const after = new Set(activePaths(to).map((path) => this.data.states[path]));
    const fromLeaves = new Set([...before].filter((name) => !after.has(name)));
    let edges = this.data.edges.filter((e) => before.has(e.source) && after.has(e.target) && (fromLeaves.has(e.source) || !before.has(e.target) || e.source === e.target));
    if (event) {
      const byEvent = edges.filter((e) => e.event === event);
      if (byEvent.length > 0) edges = byEvent;
    }
    const keys = new Set(edges.map((e) => `${e.source}->${e.target}|${e.label}`));
    for (const group of this.svg.querySelectorAll('g.edge')) {
      const text = group.querySelector('text')?.textContent?.replace(/\u00a0/g, ' ').trim() ?? '';
      const hit = [...keys].some((key) => {
        const [ends, label] = key.split('|');
        return ends === titleOf(group) && (label === '' || text.startsWith(label ?? ''));
      });
      group.classList.toggle('last', hit);
    }
    this.lastLabel = edges.length > 0 ? edges.map((e) => e.label).join(' / ') : event ?? '';
  }
}
