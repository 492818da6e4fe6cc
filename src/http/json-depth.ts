import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain/index.js';

/** Deeper JSON than this is refused: nothing in the contract nests that far, and recursion does. */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests objects/arrays deeper than `max` (iterative: safe on any input). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object' || Buffer.isBuffer(current)) continue;
    if (depth > max) return true;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** A `preValidation` hook: a parsed JSON body nested deeper than MAX_JSON_DEPTH is a 400. */
export async function limitJsonDepth(request: FastifyRequest): Promise<void> {
  if (nestsDeeperThan(request.body, MAX_JSON_DEPTH)) {
    throw new DomainError('invalid_request', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, {
      issues: [{ path: 'body', code: 'too_deep', message: `nesting deeper than ${MAX_JSON_DEPTH} levels` }],
    });
  }
}
