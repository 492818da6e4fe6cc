import type { ActorRefLike, AnyActorRef, InspectionEvent, Subscription } from 'xstate';
import { STATELY_INSPECT_VERSION, type InspectedSnapshot, type InspectionMessage } from '../../domain/index.js';
import { inspectionJson, type Json } from '../inspection-json.js';

/**
 * Live inspection of agents' actors, only while someone watches. Each agent is its own root actor
 * (`AgentCell.ensureActor`), so an observer is added to that actor's system
 * (`actor.system.inspect`) when the first watcher of the agent arrives, and removed with the last
 * one: an unwatched agent pays nothing (inspection costs actor throughput). When the agent's actor
 * is passivated (asleep, stopped) and later rehydrated, the runtime reports the new actor
 * (`attached`) and the hub observes it again.
 *
 * Events are converted to the `@statelyai/inspect` wire format (`InspectionMessage`) with secrets
 * redacted (`inspection-json.ts`). They are queued as XState reports them and converted in a
 * microtask, after the actor has finished its step: a child's `@xstate.actor` is reported before
 * its first snapshot exists. On attach, and to each new watcher, the hub first reports every
 * actor it joins as it is now (`@xstate.actor` with its current snapshot), so a watcher never
 * needs the events it missed.
 */
export type InspectionListener = (message: InspectionMessage) => void;

interface Watch {
  listeners: Set<InspectionListener>;
  actor: AnyActorRef | null;
  subscription: Subscription | null;
  queue: InspectionEvent[];
  flushScheduled: boolean;
}

/** What an inspection event's actor reference carries besides `ActorRefLike` (XState's `Actor`). */
type InspectedRef = ActorRefLike & { id?: string; _parent?: { sessionId: string }; logic?: { config?: unknown } };

export class InspectionHub {
  private readonly watches = new Map<string, Watch>();
  private readonly definitions = new WeakMap<object, string>();

  /**
   * @param liveActor the agent's live root actor, or null while it is passivated
   * @param now the clock stamped on events (`createdAt`)
   */
  constructor(
    private readonly liveActor: (agentId: string) => AnyActorRef | null,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many agents' actors are observed right now. */
  get observed(): number {
    let count = 0;
    for (const watch of this.watches.values()) if (watch.subscription) count += 1;
    return count;
  }

  /** Starts sending the agent's inspection events to `listener`; returns the function that stops it. */
  watch(agentId: string, listener: InspectionListener): () => void {
    let watch = this.watches.get(agentId);
    if (!watch) {
      watch = { listeners: new Set(), actor: null, subscription: null, queue: [], flushScheduled: false };
      this.watches.set(agentId, watch);
    }
    // What earlier watchers have not yet been told happened before this watcher's view of now.
    this.flush(watch);
    watch.listeners.add(listener);
    const actor = watch.actor ?? this.liveActor(agentId);
    if (!watch.subscription && actor) this.observe(watch, actor);
    else if (watch.actor) for (const message of this.present(watch.actor)) listener(message);
    const current = watch;
    return () => {
      current.listeners.delete(listener);
      if (current.listeners.size > 0 || this.watches.get(agentId) !== current) return;
      current.subscription?.unsubscribe();
      this.watches.delete(agentId);
    };
  }

  /** The runtime made a (new) root actor for the agent. */
  attached(agentId: string, actor: AnyActorRef): void {
    const watch = this.watches.get(agentId);
    if (watch) this.observe(watch, actor);
  }

  /** The agent's actor was stopped (passivated): its last events go out, the observer goes. */
  detached(agentId: string): void {
    const watch = this.watches.get(agentId);
    if (!watch) return;
    this.flush(watch);
    watch.subscription?.unsubscribe();
    watch.subscription = null;
    watch.actor = null;
  }

  private observe(watch: Watch, actor: AnyActorRef): void {
    if (watch.actor === actor && watch.subscription) return;
    this.flush(watch);
    watch.subscription?.unsubscribe();
    watch.actor = actor;
    watch.subscription = actor.system.inspect({
      next: (event: InspectionEvent) => {
        watch.queue.push(event);
        if (watch.flushScheduled) return;
        watch.flushScheduled = true;
        queueMicrotask(() => this.flush(watch));
      },
    });
    this.deliver(watch, this.present(actor));
  }

  private flush(watch: Watch): void {
    watch.flushScheduled = false;
    if (watch.queue.length === 0) return;
    const events = watch.queue;
    watch.queue = [];
    const messages: InspectionMessage[] = [];
    for (const event of events) {
      const message = this.convert(event);
      if (message) messages.push(message);
    }
    this.deliver(watch, messages);
  }

  private deliver(watch: Watch, messages: InspectionMessage[]): void {
    for (const message of messages) {
      for (const listener of watch.listeners) {
        try {
          listener(message);
        } catch {
          // A failing watcher must not break the others or the actor.
        }
      }
    }
  }

  /** The root actor and its children as they are now, as `@xstate.actor` events. */
  private present(root: AnyActorRef): InspectionMessage[] {
    const snapshot = root.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> };
    const children = Object.values(snapshot.children ?? {}).filter((child): child is AnyActorRef => child !== undefined);
    return [root, ...children].map((ref) => this.actorMessage(ref, root.sessionId));
  }

  private base(ref: ActorRefLike, rootId: string | undefined): { sessionId: string; rootId?: string; createdAt: string; id: null; _version: string } {
    return { sessionId: ref.sessionId, ...(rootId ? { rootId } : {}), createdAt: String(this.now()), id: null, _version: STATELY_INSPECT_VERSION };
  }

  private actorMessage(ref: InspectedRef, rootId: string | undefined): InspectionMessage {
    const parent = ref._parent;
    const definition = this.definitionOf(ref);
    return {
      type: '@xstate.actor',
      name: ref.id ?? ref.sessionId,
      ...(definition ? { definition } : {}),
      ...(parent ? { parentId: parent.sessionId } : {}),
      snapshot: inspected(ref.getSnapshot()),
      ...this.base(ref, rootId),
    };
  }

  private convert(event: InspectionEvent): InspectionMessage | null {
    switch (event.type) {
      case '@xstate.actor':
        return this.actorMessage(event.actorRef, event.rootId);
      case '@xstate.event': {
        const source = event.sourceRef?.sessionId;
        return { type: '@xstate.event', event: eventJson(event.event), ...(source ? { sourceId: source } : {}), ...this.base(event.actorRef, event.rootId) };
      }
      case '@xstate.snapshot':
        return { type: '@xstate.snapshot', event: eventJson(event.event), snapshot: inspected(event.snapshot), ...this.base(event.actorRef, event.rootId) };
      default:
        return null;
    }
  }

  /** The machine config as JSON text, once per logic. */
  private definitionOf(ref: InspectedRef): string | undefined {
    const logic = ref.logic;
    if (!logic || typeof logic.config !== 'object' || logic.config === null) return undefined;
    let text = this.definitions.get(logic);
    if (text === undefined) {
      text = JSON.stringify(inspectionJson(logic.config, { maxDepth: 32 }));
      this.definitions.set(logic, text);
    }
    return text;
  }
}

function eventJson(event: unknown): { type: string; [key: string]: Json } {
  const json = inspectionJson(event);
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && typeof json['type'] === 'string') {
    return json as { type: string; [key: string]: Json };
  }
  return { type: 'unknown' };
}

/** A snapshot reduced to what Stately reads: status, value, context, output, error. */
function inspected(snapshot: unknown): InspectedSnapshot {
  const s = (snapshot ?? {}) as { status?: unknown; value?: unknown; context?: unknown; output?: unknown; error?: unknown };
  const out: InspectedSnapshot = { status: typeof s.status === 'string' ? s.status : 'active' };
  if (s.value !== undefined) out.value = inspectionJson(s.value);
  if (s.context !== undefined) out.context = inspectionJson(s.context);
  if (s.output !== undefined) out.output = inspectionJson(s.output);
  if (s.error !== undefined) out.error = inspectionJson(s.error);
  return out;
}
