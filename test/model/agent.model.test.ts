import { describe, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { httpApi } from './adapters/agent-api.js';
import { AgentDriver } from './adapters/agent.js';
import { executePath } from './adapters/executor.js';
import { modelSuite, PATH_TIMEOUT_MS } from './adapters/suite.js';
import { agentHttpEvents, agentModel } from './models.js';
import { PathBuilder } from './paths.js';

/** The same adapters, every call and every observation over HTTP on a real socket. */
const overHttp = new AgentDriver(async (h) => {
  const app = await buildApp({ runtime: h.runtime, auth: {} });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  return { api: httpApi(base), close: () => app.close() };
});

modelSuite('agent', agentModel, new AgentDriver(), {
  extra: ({ recorder }) => {
    describe('agent machine: a path over the HTTP API', () => {
      const path = new PathBuilder(agentModel).fromEvents(agentHttpEvents, 'directed');
      it(`create → sleep → wake → stop → start → terminate (${path.name})`, { timeout: PATH_TIMEOUT_MS }, async () => {
        await executePath(overHttp, path, recorder);
      });
    });
  },
});
