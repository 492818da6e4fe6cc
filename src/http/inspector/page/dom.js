// @ts-check
/**
 * Tiny DOM helpers. Every text the server sends is inserted as text (never as markup), so an
 * agent id, a prompt or a task's output cannot inject anything into the page.
 */

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>} [attrs]
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.replace(/^on/, ''), value);
    else if (key === 'class') el.className = String(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, ...children);
  return el;
}

/**
 * @param {Element} el
 * @param {...(Node | string | number | null | undefined | false)} children
 */
export function append(el, ...children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/**
 * @param {Element} el
 * @param {...(Node | string | number | null | undefined | false)} children
 */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, ...children);
}

/** @param {string | null | undefined} iso */
export function time(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(date.getMilliseconds()).padStart(3, '0');
}

/**
 * @param {unknown} value
 * @returns {string}
 */
export function stateText(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') {
    return Object.entries(/** @type {Record<string, unknown>} */ (value))
      .map(([key, child]) => (typeof child === 'string' ? `${key}.${child}` : `${key}.(${stateText(child)})`))
      .join(' | ');
  }
  return String(value);
}

/**
 * A table of rows; `columns` are [header, cell(row)].
 * @template T
 * @param {ReadonlyArray<[string, (row: T) => Node | string | number | null | undefined]>} columns
 * @param {readonly T[]} rows
 * @param {string} empty
 */
export function table(columns, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'table',
    {},
    h('thead', {}, h('tr', {}, ...columns.map(([title]) => h('th', {}, title)))),
    h('tbody', {}, ...rows.map((row) => h('tr', {}, ...columns.map(([, cell]) => h('td', {}, cell(row) ?? ''))))),
  );
}
