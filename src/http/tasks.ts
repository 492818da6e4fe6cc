import { DomainError, ExecCommandRequest, InvokeAgentRequest, TaskInputRequest, TaskOutputQuery, TaskOutputResult, type TaskRecord } from '../domain/index.js';
import { mutation } from './mutation.js';
import { ListQuery, pageOf } from './paging.js';
import {
  AgentParams,
  apiErrors,
  ArtifactResponse,
  EmptyBody,
  MutationHeaders,
  NoQuery,
  TaskInputResponse,
  TaskPage,
  TaskParams,
  TaskStatusResponse,
  TaskStatusView,
  TaskStopResponse,
} from './schemas.js';
import type { ShutdownTracker } from './shutdown.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['tasks'];

const statusOf = (task: TaskRecord) => ({ ...task, task_id: task.id });

/** A blocking read must not hold the server open past shutdown: the answer becomes a retryable 503. */
async function unlessShuttingDown<T>(shutdown: ShutdownTracker, work: Promise<T>): Promise<T> {
  const { signal, release } = shutdown.signal();
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        const fail = (): void => reject(new DomainError('runtime_shutting_down', 'the server is shutting down'));
        if (signal.aborted) fail();
        signal.addEventListener('abort', fail, { once: true });
      }),
    ]);
  } finally {
    release();
  }
}

export function registerTaskRoutes(app: HttpApp, { runtime, shutdown }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/tasks',
    {
      schema: {
        tags,
        operationId: 'execCommand',
        summary: 'ExecCommand: a CommandTask running `cmd` with /bin/sh -c',
        params: AgentParams,
        headers: MutationHeaders,
        body: ExecCommandRequest,
        querystring: NoQuery,
        response: { 201: TaskStatusResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...statusOf(await runtime.execCommand(request.params.id, request.body, options)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/invoke',
    {
      schema: {
        tags,
        operationId: 'invokeAgent',
        summary: 'InvokeAgent: an ActorInvocation task whose result re-enters the parent',
        params: AgentParams,
        headers: MutationHeaders,
        body: InvokeAgentRequest,
        querystring: NoQuery,
        response: { 201: TaskStatusResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...statusOf(await runtime.invokeAgent(request.params.id, request.body, options)) },
      })),
  );

  app.get(
    '/api/agents/:id/tasks',
    {
      schema: {
        tags,
        operationId: 'listTasks',
        summary: 'ListTasks: non-terminal tasks only',
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: TaskPage, ...apiErrors(404) },
      },
    },
    async (request) => pageOf((await runtime.listTasks(request.params.id)).map(statusOf), request.query),
  );

  app.get(
    '/api/agents/:id/tasks/:tid',
    {
      schema: {
        tags,
        operationId: 'getTask',
        summary: 'TaskStatus snapshot (terminal tasks too)',
        params: TaskParams,
        querystring: NoQuery,
        response: { 200: TaskStatusView, ...apiErrors(404) },
      },
    },
    async (request) => statusOf(await runtime.getTask(request.params.id, request.params.tid)),
  );

  app.get(
    '/api/agents/:id/tasks/:tid/output',
    {
      schema: {
        tags,
        operationId: 'getTaskOutput',
        summary: 'Bounded output preview; block=true waits for new output or the end, up to timeout_ms',
        params: TaskParams,
        querystring: TaskOutputQuery,
        response: { 200: TaskOutputResult, ...apiErrors(404) },
      },
    },
    async (request) =>
      unlessShuttingDown(shutdown, runtime.taskOutput(request.params.id, request.params.tid, request.query)),
  );

  app.get(
    '/api/agents/:id/tasks/:tid/artifact',
    {
      schema: {
        tags,
        operationId: 'getTaskArtifact',
        summary: 'The full output, streamed',
        params: TaskParams,
        querystring: NoQuery,
        response: { 200: ArtifactResponse, ...apiErrors(404) },
      },
    },
    async (request, reply) => {
      const stream = await runtime.taskArtifact(request.params.id, request.params.tid);
      return reply.type('application/octet-stream').send(stream);
    },
  );

  app.post(
    '/api/control/agents/:id/tasks/:tid/input',
    {
      schema: {
        tags,
        operationId: 'sendTaskInput',
        summary: 'Write to stdin (only tasks created with accepts_input:true, while running)',
        params: TaskParams,
        headers: MutationHeaders,
        body: TaskInputRequest,
        querystring: NoQuery,
        response: { 200: TaskInputResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.taskInput(request.params.id, request.params.tid, request.body, options)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/tasks/:tid/stop',
    {
      schema: {
        tags,
        operationId: 'stopTask',
        summary: 'Running → Cancelling → Cancelled (SIGTERM, grace, SIGKILL); idempotent',
        params: TaskParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 200: TaskStopResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.stopTask(request.params.id, request.params.tid, options)) },
      })),
  );
}
