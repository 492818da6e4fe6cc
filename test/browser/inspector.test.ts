import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type BrowserTestServer as TestServer } from './server.js';
import { launchChromium, watchProblems, type Browser } from './chromium.js';

/**
 * The inspector in a real browser (Debian's chromium driven by playwright-core) against a real
 * server on a real socket. Screenshots go to `reports/inspector/` (ignored by git; CI keeps them
 * as artifacts).
 */
const ARTIFACTS = join('reports', 'inspector');

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The titles of the lit state nodes of one actor's chart. */
async function lit(page: Page, actor: string): Promise<string[]> {
  return page.$$eval(`.chart[data-actor="${actor}"] g.node.current > title`, (titles) => titles.map((t) => t.textContent ?? ''));
}

let browser: Browser;
beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => browser?.close());

describe('the inspector page (local mode)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => server?.close());

  it('lists a new agent live, opens it, runs /exec-wait echo hi from the page with awakeRunning lit, shows the task output, stops it; no console error or failed request', async () => {
    const api = { post: (path: string, body: unknown) => server.call('POST', path, body), get: <T>(path: string) => server.call<T>('GET', path) };
    const page = await browser.context.newPage();
    const { problems } = watchProblems(page);
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    try {
      await page.goto(`${server.base}/inspector`);
      await page.waitForSelector('.agent-list');
      await page.waitForFunction(() => document.querySelector('.agent-list tbody')?.textContent?.includes('no agents yet'));

      // Created through the API, not the page: the list follows the live event stream.
      const created = await api.post('/api/control/agents', { agent_id: 'browser-demo', mission: 'shown in a real browser' });
      expect(created.status, created.text).toBe(201);
      await page.waitForSelector('tr[data-agent="browser-demo"]', { timeout: 20_000 });
      await shoot(page, '1-listed');

      await page.click('tr[data-agent="browser-demo"]');
      // Shown once its live streams are open: the server watches the agent's actors from then on.
      await page.waitForSelector('.agent-view[data-agent="browser-demo"][data-streams="open"] .chart[data-actor="agent"]');
      await page.waitForSelector('.chart[data-actor="continuation"]');
      await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'asleep', null, { timeout: 20_000 });
      expect(await lit(page, 'agent')).toEqual(['sleeping']);
      // The accepted events come from the machine: asleep, the agent takes WAKE and STOP, not START.
      const accepted = await page.$$eval('.actor-accepts[data-actor="agent"] li', (items) => items.map((li) => li.getAttribute('data-event')));
      expect(accepted).toEqual(expect.arrayContaining(['WAKE', 'STOP', 'TERMINATE']));
      expect(accepted).not.toContain('START');
      expect(await page.isDisabled('button[data-action="start"]')).toBe(true);

      // Every lit state the agent chart shows, as it shows them.
      await page.evaluate(() => {
        const seen: string[] = [];
        (window as unknown as { litSeen: string[] }).litSeen = seen;
        const chart = document.querySelector('.chart[data-actor="agent"]');
        if (!chart) throw new Error('no agent chart');
        new MutationObserver(() => {
          for (const title of chart.querySelectorAll('g.node.current > title')) {
            const text = title.textContent ?? '';
            if (seen.at(-1) !== text) seen.push(text);
          }
        }).observe(chart, { subtree: true, attributes: true, attributeFilter: ['class'] });
      });

      await page.fill('textarea[name="prompt"]', '/exec-wait echo hi');
      await page.click('button[data-action="prompt"]');
      await page.waitForFunction(() => /prompt queued as msg_/.test(document.querySelector('.result')?.textContent ?? ''));
      await page.waitForFunction(() => (window as unknown as { litSeen: string[] }).litSeen.includes('awakeRunning'), null, { timeout: 20_000 });
      await shoot(page, '2-running');
      // ... and then asleep again, the turn and the task done.
      await page.waitForFunction(
        () => document.querySelector('[data-field="status"]')?.textContent === 'asleep' && (window as unknown as { litSeen: string[] }).litSeen.at(-1) === 'sleeping',
        null,
        { timeout: 20_000 },
      );
      const order = await page.evaluate(() => (window as unknown as { litSeen: string[] }).litSeen);
      expect(order.indexOf('awakeRunning')).toBeGreaterThan(-1);
      expect(order.lastIndexOf('sleeping')).toBeGreaterThan(order.indexOf('awakeRunning'));
      // The task's output tail, and its chart ended in `completed`.
      await page.waitForFunction(() => [...document.querySelectorAll('[data-panel="tasks"] li[data-task] pre.output')].some((pre) => pre.textContent?.trim() === 'hi'), null, { timeout: 20_000 });
      const task = await page.$eval('[data-panel="tasks"] li[data-task]', (li) => ({ id: li.getAttribute('data-task'), status: li.getAttribute('data-status') }));
      expect(task.status).toBe('completed');
      await page.waitForFunction((id) => document.querySelector(`.chart[data-actor="${id}"] g.node.current > title`)?.textContent === 'completed', task.id);
      // The reason chain and the event stream have the run.
      expect(await page.textContent('[data-panel="transitions"]')).toContain('active.awakeRunning → active.awaitingTask');
      expect(await page.$$eval('[data-panel="events"] li', (items) => items.map((li) => li.getAttribute('data-type')))).toEqual(expect.arrayContaining(['turn_started', 'turn_finished', 'task_status_changed', 'transition_committed']));
      // The last transition is marked on the drawing.
      expect(await page.$$eval('.chart[data-actor="agent"] g.edge.last > title', (titles) => titles.map((t) => t.textContent))).toEqual(['awakeIdle->sleeping']);
      await shoot(page, '3-asleep');

      await page.click('button[data-action="stop"]');
      await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'stopped', null, { timeout: 20_000 });
      await page.waitForFunction(() => !(document.querySelector('button[data-action="start"]') as HTMLButtonElement | null)?.disabled);
      expect(await page.isDisabled('button[data-action="stop"]')).toBe(true);
      const status = await api.get<{ agent: { status: string } }>('/api/agents/browser-demo/status');
      expect(status.body.agent.status).toBe('stopped');
      await shoot(page, '4-stopped');

      expect(problems).toEqual([]);
      // Everything the page loaded came from this server.
      expect(requested.filter((url) => !url.startsWith(server.base))).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('loads with 1,000 agents (measured, not asserted), pages through them and searches', async () => {
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => server.runtime.createAgent({ agent_id: `bulk-${String(i + j).padStart(4, '0')}` })));
    }
    // Three fresh loads, each in a new tab (a reload would abort the previous page's streams).
    const runs: number[] = [];
    for (let run = 0; run < 3; run++) {
      const tab = await browser.context.newPage();
      await tab.goto(`${server.base}/inspector`);
      await tab.waitForFunction(() => performance.getEntriesByName('inspector:agents-listed').length > 0);
      runs.push(await tab.evaluate(() => (performance.getEntriesByName('inspector:agents-listed')[0] as PerformanceEntry).startTime));
      await tab.close();
    }
    const page = await browser.context.newPage();
    const { problems } = watchProblems(page);
    try {
      await page.goto(`${server.base}/inspector`);
      await page.waitForSelector('.agent-list tbody tr[data-agent]');
      await writeFile(join(ARTIFACTS, 'load-1000-agents.json'), `${JSON.stringify({ agents: 1001, listed_after_ms: runs }, null, 2)}\n`);
      console.log(`inspector: first page of 1,001 agents listed ${runs.map((ms) => ms.toFixed(0)).join(' / ')} ms after navigation start (3 loads)`);

      expect(await page.$$eval('.agent-list tbody tr[data-agent]', (rows) => rows.length)).toBe(50);
      await page.click('.pager button:has-text("next")');
      await page.waitForFunction(() => document.querySelector('.position')?.textContent === 'page 2');
      expect(await page.$eval('.agent-list tbody tr[data-agent]', (row) => row.getAttribute('data-agent'))).toBe('bulk-0049');
      await page.click('.pager button:has-text("prev")');
      await page.waitForFunction(() => document.querySelector('.agent-list tbody tr[data-agent]')?.getAttribute('data-agent') === 'browser-demo');

      await page.fill('input[name="q"]', 'BULK-099');
      await page.waitForFunction(() => document.querySelectorAll('.agent-list tbody tr[data-agent]').length === 10);
      expect(await page.$$eval('.agent-list tbody tr[data-agent]', (rows) => rows.map((r) => r.getAttribute('data-agent')))).toEqual(Array.from({ length: 10 }, (_, i) => `bulk-099${i}`));
      await page.fill('input[name="q"]', '');
      await page.selectOption('select[name="status"]', 'stopped');
      await page.waitForFunction(() => document.querySelectorAll('.agent-list tbody tr[data-agent]').length === 1);
      expect(await page.$eval('.agent-list tbody tr[data-agent]', (row) => row.getAttribute('data-agent'))).toBe('browser-demo');
      await shoot(page, '5-search');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('says when it cannot reach the server and stops showing its state as live', async () => {
    const own = await startServer();
    const page = await browser.context.newPage();
    const { problems } = watchProblems(page);
    try {
      await own.call('POST', '/api/control/agents', { agent_id: 'goes-away' });
      await page.goto(`${own.base}/inspector#/agents/goes-away`);
      await page.waitForSelector('.agent-view[data-agent="goes-away"] .chart[data-actor="agent"]');
      await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'asleep');
      expect(await page.getAttribute('body', 'data-live')).toBe('true');
      expect(await page.isHidden('.banner')).toBe(true);
      expect(problems).toEqual([]);

      await own.close();
      await page.waitForFunction(() => document.body.dataset['live'] === 'false', null, { timeout: 20_000 });
      expect(await page.textContent('.banner')).toMatch(/Cannot reach the server since .* not live/);
      await shoot(page, '6-unreachable');
    } finally {
      await page.close();
      await own.close();
    }
  });
});

describe('the inspector page (bearer mode)', () => {
  const token = 'browser-bearer-token-0123456789';
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ token });
  });
  afterAll(async () => server?.close());

  it('asks for the token, keeps it out of URLs, cookies and logs, and works with it', async () => {
    expect((await server.call('POST', '/api/control/agents', { agent_id: 'secured' })).status).toBe(201);
    const page = await browser.context.newPage();
    const { problems } = watchProblems(page);
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    try {
      await page.goto(`${server.base}/inspector`);
      await page.waitForSelector('form.token-dialog input[name="token"]');
      await page.fill('form.token-dialog input[name="token"]', token);
      await page.click('form.token-dialog button[type="submit"]');
      await page.waitForSelector('tr[data-agent="secured"]');
      await page.click('tr[data-agent="secured"]');
      await page.waitForSelector('.agent-view[data-agent="secured"] .chart[data-actor="agent"]');
      await page.waitForFunction(() => document.querySelector('[data-field="status"]')?.textContent === 'asleep', null, { timeout: 20_000 });

      expect(page.url()).not.toContain(token);
      for (const url of requested) expect(url).not.toContain(token);
      expect(await browser.context.cookies()).toEqual([]);
      expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain(token);
      expect(await page.evaluate(() => sessionStorage.getItem('holon-inspector-token'))).toBe(token);
      for (const line of server.logs) expect(line).not.toContain(token);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
