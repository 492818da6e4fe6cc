export {
  deriveWorkItemScheduling,
  isWaitingState,
  projectWorkItems,
  waitingWorkItem,
  workSignal,
} from './work-item.js';
export type { ProjectedWorkItem, WaitingSchedulingState, WaitingWorkItem, WorkItemFact } from './work-item.js';
export { activeAgentWaits, activeWaitsOf, externalTriggerOf, isActiveWait, strandedReason, waitMatchesMessage } from './waits.js';
export type { MatchedMessage, MatchedWait, StrandedReason, WaitFact, WaitSubject } from './waits.js';
export { derivePosture } from './posture.js';
export { deriveClosure } from './closure.js';
export { resolveContinuation } from './continuation.js';
export type { ContinuationTrigger } from './continuation.js';
export {
  canSleep,
  decideForMessage,
  decideIdleSignal,
  hasActiveTasks,
  hasQueuedInput,
  hasRunnableWork,
  idleBoundaryDecision,
  waitDecision,
} from './decision.js';
export type { IdleSignal } from './decision.js';
export { wakeHintDisposition } from './wake-hint.js';
export { acceptsTaskUpdate, isTerminalTask, legalTaskTransition, taskPhaseRank } from './task-phase.js';
export type { TaskPhaseRank } from './task-phase.js';
export { isOperatorInterjection, mayJoinTurn } from './turn-batch.js';
export type { JoinPoint, JoinVerdict, TurnMember, TurnSoFar } from './turn-batch.js';
