import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it with apt when it is missing); never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Flags for a closed network: without the background-networking ones Chromium's own outbound
 * connections (updates, sync, field trials) are refused and logged. `--no-sandbox` because the
 * tests run as root.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile directory, removed on close. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = await mkdtemp(join(tmpdir(), 'holon-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1440, height: 1000 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface PageProblems {
  /** Console errors, page errors and failed requests, as they happened. */
  problems: string[];
}

/** Records every console error, uncaught page error and failed request of `page`. */
export function watchProblems(page: Page, ignore: (text: string) => boolean = () => false): PageProblems {
  const problems: string[] = [];
  const note = (text: string): void => {
    if (!ignore(text)) problems.push(text);
  };
  page.on('console', (message) => {
    if (message.type() === 'error') note(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => note(`page error: ${error.message}`));
  page.on('requestfailed', (request) => note(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`));
  page.on('response', (response) => {
    if (response.status() >= 400) note(`HTTP ${response.status()}: ${response.request().method()} ${response.url()}`);
  });
  return { problems };
}
