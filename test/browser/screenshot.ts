/**
 * `npm run inspector:screenshot`: regenerates `visualizations/inspector.png`, the picture of the
 * inspector in the README. A real server on a temp data dir, three agents, one of them running a
 * command task it waits for, the page in Debian's chromium; the shot is taken while the task runs.
 */
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { startServer } from './server.js';
import { launchChromium, watchProblems } from './chromium.js';

const OUT = resolve('visualizations', 'inspector.png');

const server = await startServer();
const browser = await launchChromium();
try {
  for (const agent_id of ['builder', 'docs-writer', 'reviewer']) await server.call('POST', '/api/control/agents', { agent_id, ...(agent_id === 'builder' ? { mission: 'keep CI green' } : {}) });
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1440, height: 1280 });
  const { problems } = watchProblems(page);
  await page.goto(`${server.base}/inspector#/agents/builder`);
  await page.waitForSelector('.agent-view[data-agent="builder"][data-streams="open"]');
  await page.fill('textarea[name="prompt"]', "/exec-wait echo 'building…'; sleep 4; echo done");
  await page.click('button[data-action="prompt"]');
  await page.waitForFunction(() => document.querySelector('.chart[data-actor="agent"] g.node.current > title')?.textContent === 'awaitingTask', null, { timeout: 15_000 });
  await page.waitForFunction(() => [...document.querySelectorAll('pre.output')].some((pre) => pre.textContent?.includes('building')), null, { timeout: 15_000 });
  await page.waitForSelector('.chart[data-machine="task"] g.node.current');
  await page.waitForTimeout(600);
  await page.screenshot({ path: OUT });
  if (problems.length > 0) throw new Error(`the page reported problems: ${problems.join('; ')}`);
  console.log(`wrote ${OUT}`);
} catch (error) {
  await rm(OUT, { force: true });
  throw error;
} finally {
  await browser.close();
  await server.close();
}
