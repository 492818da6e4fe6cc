import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { AnyStateMachine } from 'xstate';
import { z } from 'zod';
import { machines } from '../../../machines/index.js';
import { HttpError } from '../errors.js';
import { apiErrors, MachineParams, NoQuery, openErrors } from '../schemas.js';
import type { HttpApp } from '../types.js';
import { InspectorChart, loadChart } from './charts.js';

/**
 * `GET /inspector`: the live inspector, a page of plain ES modules served from
 * `src/http/inspector/page/` (no build step, no CDN, nothing fetched from anywhere but this
 * server), and `GET /api/inspector/charts/:name`, the drawings it lights up. The page itself is
 * open (it holds no data); everything it shows comes from the `/api/*` routes, with the bearer
 * token in bearer mode.
 */
const tags = ['inspector'];

/** The files of the page: name → content type. Nothing else is served from the folder. */
const SCRIPT = 'text/javascript; charset=utf-8';
const ASSETS: ReadonlyMap<string, string> = new Map([
  ['index.html', 'text/html; charset=utf-8'],
  ['app.js', SCRIPT],
  ['api.js', SCRIPT],
  ['agent-list.js', SCRIPT],
  ['agent-view.js', SCRIPT],
  ['chart.js', SCRIPT],
  ['dom.js', SCRIPT],
  ['style.css', 'text/css; charset=utf-8'],
  ['favicon.svg', 'image/svg+xml'],
]);

/** The page talks to this server only, and nothing may frame it. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** The checkout this module runs from (`src/…` or `dist/src/…`): the nearest folder with `package.json` and `visualizations/`. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'visualizations'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('holon-xstate: cannot find the package root (package.json and visualizations/)');
    dir = parent;
  }
}

interface Asset {
  body: Buffer;
  etag: string;
}

const AssetParams = z.object({ file: z.string().max(64) });
const PageResponse = { description: 'The inspector page or one of its files', content: { 'text/html': { schema: z.string() } } };

export function registerInspectorRoutes(app: HttpApp): void {
  const root = packageRoot();
  const pageDir = join(root, 'src', 'http', 'inspector', 'page');
  const assets = new Map<string, Promise<Asset>>();
  const asset = (name: string): Promise<Asset> => {
    let loaded = assets.get(name);
    if (!loaded) {
      loaded = readFile(join(pageDir, name)).then((body) => ({ body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }));
      // A failed read is retried on the next request.
      loaded.catch(() => assets.delete(name));
      assets.set(name, loaded);
    }
    return loaded;
  };

  const serve = async (name: string, ifNoneMatch: string | undefined, reply: FastifyReply) => {
    const type = ASSETS.get(name);
    if (type === undefined) throw new HttpError(404, 'route_not_found', 'no such inspector file');
    const { body, etag } = await asset(name);
    reply.headers({ ...SECURITY_HEADERS, etag, 'content-type': type });
    if (ifNoneMatch === etag) return reply.code(304).send();
    return reply.send(body);
  };

  app.get(
    '/inspector',
    { schema: { tags, operationId: 'getInspectorPage', summary: 'The live inspector page (offline: every file it uses is served here)', querystring: NoQuery, response: { 200: PageResponse, ...openErrors(404) } } },
    async (request, reply) => serve('index.html', request.headers['if-none-match'], reply),
  );

  app.get(
    '/inspector/:file',
    { schema: { tags, operationId: 'getInspectorFile', summary: "One of the inspector page's own files (scripts, styles, icon)", params: AssetParams, querystring: NoQuery, response: { 200: PageResponse, ...openErrors(404) } } },
    async (request, reply) => serve(request.params.file, request.headers['if-none-match'], reply),
  );

  const registry: ReadonlyMap<string, AnyStateMachine> = new Map(Object.entries(machines));
  const charts = new Map<string, Promise<InspectorChart>>();
  app.get(
    '/api/inspector/charts/:name',
    {
      schema: {
        tags,
        operationId: 'getInspectorChart',
        summary: "A machine's drawing (SVG generated from its definition) with the map from state paths and transitions to its nodes and edges",
        params: MachineParams,
        querystring: NoQuery,
        response: { 200: InspectorChart, ...apiErrors(404) },
      },
    },
    async (request) => {
      const { name } = request.params;
      const machine = registry.get(name);
      if (!machine) throw new HttpError(404, 'machine_not_found', 'no machine with that name');
      let chart = charts.get(name);
      if (!chart) {
        chart = loadChart(name, machine, join(root, 'visualizations'));
        chart.catch(() => charts.delete(name));
        charts.set(name, chart);
      }
      return chart;
    },
  );
}
