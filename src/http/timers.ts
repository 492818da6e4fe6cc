import { CreateTimerRequest, TimerRecord } from '../domain/index.js';
import { mutation } from './mutation.js';
import { ListQuery, pageOf } from './paging.js';
import {
  AgentParams,
  apiErrors,
  EmptyBody,
  MutationHeaders,
  NoQuery,
  TimerPage,
  TimerParams,
  TimerResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['timers'];

export function registerTimerRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/timers',
    {
      schema: {
        tags,
        operationId: 'createTimer',
        summary: 'A durable timer: fires once (or per interval), never twice for one due time',
        params: AgentParams,
        headers: MutationHeaders,
        body: CreateTimerRequest,
        querystring: NoQuery,
        response: { 201: TimerResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...(await runtime.createTimer(request.params.id, request.body, options)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/timers/:tid/cancel',
    {
      schema: {
        tags,
        operationId: 'cancelTimer',
        summary: 'Cancel a timer (idempotent; a completed timer → 400 timer_completed)',
        params: TimerParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 200: TimerResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.cancelTimer(request.params.id, request.params.tid, options)) },
      })),
  );

  app.get(
    '/api/agents/:id/timers',
    {
      schema: {
        tags,
        operationId: 'listTimers',
        summary: 'Timers',
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: TimerPage, ...apiErrors(404) },
      },
    },
    async (request) => pageOf(await runtime.listTimers(request.params.id), request.query),
  );

  app.get(
    '/api/agents/:id/timers/:tid',
    {
      schema: {
        tags,
        operationId: 'getTimer',
        summary: 'One timer',
        params: TimerParams,
        querystring: NoQuery,
        response: { 200: TimerRecord, ...apiErrors(404) },
      },
    },
    async (request) => runtime.getTimer(request.params.id, request.params.tid),
  );
}
