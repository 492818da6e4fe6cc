import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { validationError } from '../../src/http/errors.js';

/** The stack frames of an error (the lines after its header). */
const frames = (error: Error): string[] => (error.stack ?? '').split('\n').slice(1);

describe('refusals carry no stack trace; faults do', () => {
  it.each([
    ['invalid_request', 400],
    ['forbidden', 403],
    ['agent_not_found', 404],
    ['agent_stopped', 409],
    ['inbox_full', 429],
  ] as const)('a %s DomainError (%i) has its header and no frames', (code, status) => {
    const error = new DomainError(code, `refused: ${code}`);
    expect(error.httpStatus).toBe(status);
    expect(error.stack).toBe(`DomainError: refused: ${code}`);
    expect(frames(error)).toEqual([]);
  });

  it.each(['internal_error', 'store_unavailable', 'runtime_shutting_down'] as const)('a %s DomainError (5xx) keeps its frames', (code) => {
    const error = new DomainError(code, 'fault');
    expect(error.httpStatus).toBeGreaterThanOrEqual(500);
    expect(frames(error).length).toBeGreaterThan(0);
  });

  it('leaves the stack trace limit as it found it', () => {
    const before = Error.stackTraceLimit;
    void new DomainError('forbidden', 'x');
    void validationError([{ instancePath: '/text', message: 'Required' }], 'body');
    expect(Error.stackTraceLimit).toBe(before);
    expect(frames(new Error('after')).length).toBeGreaterThan(0);
  });

  it('words a validation failure as Fastify does, without frames', () => {
    const error = validationError([{ instancePath: '/text', message: 'Invalid input' }, { instancePath: '', message: 'Unrecognized key: "txt"' }], 'body');
    expect(error.message).toBe('body/text Invalid input, body Unrecognized key: "txt"');
    expect(frames(error)).toEqual([]);
  });
});
