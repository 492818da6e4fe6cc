import { assign, enqueueActions, setup } from 'xstate';
import type {
  AgentStatus,
  ClosureDecision,
  ContinuationResolution,
  WaitConditionKind,
  WakeDisposition,
} from '../src/domain/index.js';
import { resolveContinuation, type ContinuationTrigger } from './contracts/continuation.js';
import { waitMatchesMessage, type MatchedMessage } from './contracts/waits.js';
import { wakeHintDisposition } from './contracts/wake-hint.js';

/**
 * Seed 003 waiting → trigger → resolution flow, one actor per agent. Two regions:
 * `wait` mirrors the agent-level wait and classifies each trigger; `wakeHint` keeps wake hints
 * (liveness only) deduplicated: while one is pending, more hints coalesce into it.
 */
export interface ContinuationInput {
  agentId: string;
}

export interface ActiveWait {
  waitId: string;
  kind: WaitConditionKind;
  reason: string;
  resource: string | null;
  workItemId: string | null;
}

export interface PendingWakeHint {
  reason: string;
  source: string | null;
}

export interface ContinuationContext extends ContinuationInput {
  wait: ActiveWait | null;
  resolution: ContinuationResolution | null;
  /** The last trigger satisfied the wait held (waitMatchesMessage): its claim ends the wait. */
  waitSatisfied: boolean;
  hint: PendingWakeHint | null;
  lastDisposition: WakeDisposition | null;
}

export type ContinuationEvent =
  | ({ type: 'WAIT.SET' } & ActiveWait)
  | { type: 'WAIT.CANCEL' }
  | { type: 'TRIGGER'; trigger: ContinuationTrigger; prior: ClosureDecision | null; message: MatchedMessage }
  | { type: 'RESOLUTION.APPLIED' }
  | { type: 'WAKE_HINT'; hint: PendingWakeHint; status: AgentStatus; queueDepth: number }
  | { type: 'HINT.FLUSH' }
  | { type: 'TICK.CONSUMED' };

export type ContinuationEmitted =
  | { type: 'continuation.resolved'; resolution: ContinuationResolution }
  | { type: 'wake.disposition'; disposition: WakeDisposition; hint: PendingWakeHint }
  | { type: 'wake.tick_requested'; hint: PendingWakeHint };

type HintEvent = Extract<ContinuationEvent, { type: 'WAKE_HINT' }>;

function dispositionOf(event: ContinuationEvent): WakeDisposition | null {
  return event.type === 'WAKE_HINT' ? wakeHintDisposition({ status: event.status, queue_depth: event.queueDepth }) : null;
}

export const continuationMachine = setup({
  types: {
    context: {} as ContinuationContext,
    input: {} as ContinuationInput,
    events: {} as ContinuationEvent,
    emitted: {} as ContinuationEmitted,
  },
  guards: {
    isIgnoredHint: ({ event }) => dispositionOf(event) === 'ignored',
    isCoalescedHint: ({ event }) => dispositionOf(event) === 'coalesced',
    hasWait: ({ context }) => context.wait !== null,
    /**
     * The claimed trigger satisfies the wait held (waitMatchesMessage): the runtime resolves that
     * wait's record in the same claim, so the statechart lets it go too. How the trigger is
     * classified (matched_waiting_reason, resolveContinuation) decides the model re-entry, not
     * the wait's end: an agent-level operator wait reads as an external change to the closure,
     * yet only an operator prompt ends it.
     */
    triggerSatisfiesWait: ({ context }) => context.waitSatisfied === true,
  },
  actions: {
    setWait: assign({
      wait: ({ event }) =>
        event.type === 'WAIT.SET'
          ? { waitId: event.waitId, kind: event.kind, reason: event.reason, resource: event.resource, workItemId: event.workItemId }
          : null,
    }),
    clearWait: assign({ wait: null }),
    resolve: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'TRIGGER') return;
      const resolution = resolveContinuation(event.trigger, event.prior);
      const held = context.wait;
      const waitSatisfied = held !== null && waitMatchesMessage({ kind: held.kind, subject_ref: held.resource }, event.message);
      enqueue.assign({ resolution, waitSatisfied });
      enqueue.emit({ type: 'continuation.resolved', resolution });
    }),
    storeHint: assign({ hint: ({ event, context }) => (event.type === 'WAKE_HINT' ? event.hint : context.hint) }),
    clearHint: assign({ hint: null }),
    report: enqueueActions(({ event, enqueue }, params: { disposition: WakeDisposition }) => {
      if (event.type !== 'WAKE_HINT') return;
      enqueue.assign({ lastDisposition: params.disposition });
      enqueue.emit({ type: 'wake.disposition', disposition: params.disposition, hint: (event as HintEvent).hint });
    }),
    requestTick: enqueueActions(({ context, enqueue }) => {
      if (context.hint) enqueue.emit({ type: 'wake.tick_requested', hint: context.hint });
    }),
  },
}).createMachine({
  id: 'continuation',
  context: ({ input }) => ({ ...input, wait: null, resolution: null, waitSatisfied: false, hint: null, lastDisposition: null }),
  type: 'parallel',
  states: {
    wait: {
      initial: 'idle',
      states: {
        idle: {
          on: {
            'WAIT.SET': { target: 'waiting', actions: 'setWait' },
            TRIGGER: { target: 'resolving', actions: 'resolve' },
          },
        },
        waiting: {
          on: {
            'WAIT.SET': { target: 'waiting', reenter: true, actions: 'setWait' },
            'WAIT.CANCEL': { target: 'idle', actions: 'clearWait' },
            TRIGGER: { target: 'resolving', actions: 'resolve' },
          },
        },
        resolving: {
          on: {
            'RESOLUTION.APPLIED': [
              { guard: 'triggerSatisfiesWait', target: 'idle', actions: 'clearWait' },
              { guard: 'hasWait', target: 'waiting' },
              { target: 'idle' },
            ],
          },
        },
      },
    },
    wakeHint: {
      initial: 'clear',
      states: {
        clear: {
          on: {
            WAKE_HINT: [
              { guard: 'isIgnoredHint', actions: { type: 'report', params: { disposition: 'ignored' } } },
              { guard: 'isCoalescedHint', target: 'stored', actions: ['storeHint', { type: 'report', params: { disposition: 'coalesced' } }] },
              { target: 'pending', actions: ['storeHint', { type: 'report', params: { disposition: 'triggered' } }, 'requestTick'] },
            ],
          },
        },
        stored: {
          on: {
            WAKE_HINT: [
              { guard: 'isIgnoredHint', actions: { type: 'report', params: { disposition: 'ignored' } } },
              // Level-triggered: the latest hint replaces the stored one.
              { actions: ['storeHint', { type: 'report', params: { disposition: 'coalesced' } }] },
            ],
            'HINT.FLUSH': { target: 'pending', actions: 'requestTick' },
          },
        },
        pending: {
          on: {
            WAKE_HINT: [
              { guard: 'isIgnoredHint', actions: { type: 'report', params: { disposition: 'ignored' } } },
              { actions: { type: 'report', params: { disposition: 'coalesced' } } },
            ],
            'TICK.CONSUMED': { target: 'clear', actions: 'clearHint' },
          },
        },
      },
    },
  },
});
