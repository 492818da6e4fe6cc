import { z } from 'zod';

/**
 * The inspection events of an agent's actors, in the wire format of `@statelyai/inspect`
 * (`StatelyInspectionEvent`: `@xstate.actor`, `@xstate.event`, `@xstate.snapshot`), so Stately's
 * own receivers can follow a server-side agent. Contexts and events are reduced to JSON with
 * secrets redacted before they get here.
 */

/** The `@statelyai/inspect` release whose wire format these events follow (its `_version` field). */
export const STATELY_INSPECT_VERSION = '0.7.2';

export const InspectedSnapshot = z.object({
  status: z.string(),
  value: z.unknown().optional(),
  context: z.unknown().optional(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type InspectedSnapshot = z.infer<typeof InspectedSnapshot>;

export const InspectedEventObject = z.looseObject({ type: z.string() });

const base = {
  /** The session id of the actor the event is about (`x:<n>`, unique within one actor system). */
  sessionId: z.string(),
  /** The session id of the system's root actor (the agent actor). */
  rootId: z.string().optional(),
  /** Milliseconds since the epoch, as a decimal string (Stately's convention). */
  createdAt: z.string(),
  id: z.string().nullable(),
  _version: z.string(),
};

export const StatelyActorEvent = z.object({
  type: z.literal('@xstate.actor'),
  /** The actor's id: the agent id for the root, `continuation`, or a task id. */
  name: z.string(),
  /** The machine config as JSON text (functions reduced to their names). */
  definition: z.string().optional(),
  parentId: z.string().optional(),
  snapshot: InspectedSnapshot,
  ...base,
});

export const StatelyEventEvent = z.object({
  type: z.literal('@xstate.event'),
  event: InspectedEventObject,
  sourceId: z.string().optional(),
  ...base,
});

export const StatelySnapshotEvent = z.object({
  type: z.literal('@xstate.snapshot'),
  event: InspectedEventObject,
  snapshot: InspectedSnapshot,
  ...base,
});

export const InspectionMessage = z.discriminatedUnion('type', [StatelyActorEvent, StatelyEventEvent, StatelySnapshotEvent]);
export type InspectionMessage = z.infer<typeof InspectionMessage>;

/** One transition an event can take from the active state nodes, as the machine defines it. */
export const AcceptedTransition = z.object({
  /** The state node that declares the transition (a dotted path; `''` for the machine root). */
  source: z.string(),
  /** Target state paths; empty for a transition that only runs actions. */
  targets: z.array(z.string()),
  guard: z.string().nullable(),
});

/** An event the actor's current state handles, and whether a bare `{ type }` would be taken now. */
export const AcceptedEvent = z.object({
  type: z.string(),
  /** `snapshot.can({ type })`: the machine takes a payload-less event of this type now (guards evaluated). */
  enabled: z.boolean(),
  transitions: z.array(AcceptedTransition),
});
export type AcceptedEvent = z.infer<typeof AcceptedEvent>;

export const ActorAccepts = z.object({
  /** `agent`, `continuation` or a task id. */
  id: z.string(),
  machine: z.enum(['agent', 'task', 'continuation']),
  status: z.string(),
  state: z.unknown(),
  accepts: z.array(AcceptedEvent),
});
export type ActorAccepts = z.infer<typeof ActorAccepts>;

export const AgentAccepts = z.object({
  agent_id: z.string(),
  /** Whether the agent has a live actor now (false: computed from the last committed snapshot). */
  live: z.boolean(),
  actors: z.array(ActorAccepts),
});
export type AgentAccepts = z.infer<typeof AgentAccepts>;
