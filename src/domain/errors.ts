import { z } from 'zod';

/** Every error code of the HTTP contract; the runtime raises the same codes. */
export const ErrorCode = z.enum([
  'invalid_request',
  'invalid_json',
  'unauthorized',
  'forbidden',
  'agent_not_found',
  'task_not_found',
  'timer_not_found',
  'trigger_not_found',
  'work_item_not_found',
  'snapshot_not_found',
  'cursor_not_found',
  'wait_not_found',
  'run_not_found',
  'agent_exists',
  'agent_stopped',
  'agent_terminated',
  'version_conflict',
  'idempotency_conflict',
  'idempotency_in_progress',
  'illegal_transition',
  'no_current_run',
  'stale_run_id',
  'task_not_accepting_input',
  'task_not_running',
  'timer_completed',
  'lease_lost',
  'guard_rejected',
  'snapshot_incompatible',
  'payload_too_large',
  'inbox_full',
  'store_unavailable',
  'runtime_shutting_down',
  'internal_error',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_json: 400,
  timer_completed: 400,
  unauthorized: 401,
  forbidden: 403,
  agent_not_found: 404,
  task_not_found: 404,
  timer_not_found: 404,
  trigger_not_found: 404,
  work_item_not_found: 404,
  snapshot_not_found: 404,
  cursor_not_found: 404,
  wait_not_found: 404,
  run_not_found: 404,
  agent_exists: 409,
  agent_stopped: 409,
  agent_terminated: 409,
  version_conflict: 409,
  idempotency_conflict: 409,
  idempotency_in_progress: 409,
  illegal_transition: 409,
  no_current_run: 409,
  stale_run_id: 409,
  task_not_accepting_input: 409,
  task_not_running: 409,
  lease_lost: 409,
  snapshot_incompatible: 409,
  payload_too_large: 413,
  inbox_full: 429,
  guard_rejected: 422,
  store_unavailable: 503,
  runtime_shutting_down: 503,
  internal_error: 500,
};

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'store_unavailable',
  'runtime_shutting_down',
  'idempotency_in_progress',
  'inbox_full',
]);

/** A typed domain failure; raising one means nothing was changed. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    // A refusal (4xx) is the contract answering, not a fault: it captures no stack trace, which
    // is a good part of a refused request's cost under a flood (429s, 403s). A 5xx keeps its stack
    // for the log.
    const stackTraceLimit = Error.stackTraceLimit;
    if (STATUS[code] < 500) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'DomainError';
    this.code = code;
    this.details = details;
  }

  get httpStatus(): number {
    return STATUS[this.code];
  }

  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

export const ErrorEnvelope = z.object({
  ok: z.literal(false),
  error: z.object({
    code: z.string(),
    message: z.string(),
    retryable: z.boolean(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
