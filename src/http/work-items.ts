import { CompleteWorkItemRequest, CreateWorkItemRequest, PickWorkItemRequest, UpdateWorkItemRequest, WorkItemView } from '../domain/index.js';
import { mutation } from './mutation.js';
import { ListQuery, pageOf } from './paging.js';
import {
  AgentParams,
  apiErrors,
  MutationHeaders,
  NoQuery,
  WorkItemPage,
  WorkItemParams,
  WorkItemResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['work items'];

export function registerWorkItemRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/work-items',
    {
      schema: {
        tags,
        operationId: 'createWorkItem',
        summary: 'Create an open work item (does not change focus)',
        params: AgentParams,
        headers: MutationHeaders,
        body: CreateWorkItemRequest,
        querystring: NoQuery,
        response: { 201: WorkItemResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...(await runtime.createWorkItem(request.params.id, request.body, options)) },
      })),
  );

  app.patch(
    '/api/control/agents/:id/work-items/:wid',
    {
      schema: {
        tags,
        operationId: 'updateWorkItem',
        summary: 'Update objective, plan status or blocker',
        params: WorkItemParams,
        headers: MutationHeaders,
        body: UpdateWorkItemRequest,
        querystring: NoQuery,
        response: { 200: WorkItemResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: {
          ok: true as const,
          ...(await runtime.updateWorkItem(request.params.id, request.params.wid, request.body, options)),
        },
      })),
  );

  app.post(
    '/api/control/agents/:id/work-items/:wid/pick',
    {
      schema: {
        tags,
        operationId: 'pickWorkItem',
        summary: 'Make the work item current',
        params: WorkItemParams,
        headers: MutationHeaders,
        body: PickWorkItemRequest.nullish(),
        querystring: NoQuery,
        response: { 200: WorkItemResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: {
          ok: true as const,
          ...(await runtime.pickWorkItem(request.params.id, request.params.wid, request.body ?? { clear_blocker: false }, options)),
        },
      })),
  );

  app.post(
    '/api/control/agents/:id/work-items/:wid/complete',
    {
      schema: {
        tags,
        operationId: 'completeWorkItem',
        summary: 'Complete the work item with a report',
        params: WorkItemParams,
        headers: MutationHeaders,
        body: CompleteWorkItemRequest,
        querystring: NoQuery,
        response: { 200: WorkItemResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: {
          ok: true as const,
          ...(await runtime.completeWorkItem(request.params.id, request.params.wid, request.body, options)),
        },
      })),
  );

  app.get(
    '/api/agents/:id/work-items',
    {
      schema: {
        tags,
        operationId: 'listWorkItems',
        summary: 'Work items with their derived scheduling state',
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: WorkItemPage, ...apiErrors(404) },
      },
    },
    async (request) => pageOf(await runtime.listWorkItems(request.params.id), request.query),
  );

  app.get(
    '/api/agents/:id/work-items/:wid',
    {
      schema: {
        tags,
        operationId: 'getWorkItem',
        summary: 'One work item with its derived scheduling state',
        params: WorkItemParams,
        querystring: NoQuery,
        response: { 200: WorkItemView, ...apiErrors(404) },
      },
    },
    async (request) => runtime.getWorkItem(request.params.id, request.params.wid),
  );
}
