import { decideIdleSignal, wakeHintDisposition } from '../../../machines/contracts/index.js';
import {
  DomainError,
  EnqueueRequest,
  PromptRequest,
  WakeRequest,
  type CallbackResult,
  type ExternalTriggerRecord,
  type MessageAccepted,
  type WakeResult,
} from '../../domain/index.js';
import { factsOf } from '../agent/facts.js';
import { admitMessage, pendingCount, type NewMessage } from '../agent/messages.js';
import type { Tx } from '../agent/tx.js';
import type { CallbackBody, MutationOptions } from '../api.js';
import { tokenMatches } from '../capability.js';
import { newId } from '../clock.js';
import { promised } from '../promised.js';
import type { AgentCell } from '../agent/agent-cell.js';
import type { AgentCells, MutateOptions } from '../host/cells.js';
import type { InboxBounds } from '../host/inbox-bounds.js';
import { bodyBytes } from '../agent/queue-tally.js';
import { recordDecision } from '../records/decisions.js';
import { callbackText, recordDelivery, type Delivery } from '../records/triggers.js';

/** A stopped agent takes no new input (prompts, events, triggers, tasks). */
export function refuseStopped(tx: Tx): void {
  if (tx.doc.state.status === 'stopped') {
    throw new DomainError('agent_stopped', `agent ${tx.cell.id} is stopped; POST /api/control/agents/${tx.cell.id}/control {"action":"start"} first`);
  }
}

/**
 * A wake hint becomes a system tick (seed 003), once per hint (its key): the decision is the
 * contract's (`decideIdleSignal`, holon-reference §6.2 rule 3), recorded before the tick is queued;
 * a hint whose tick was queued already is a `noop(duplicate_wake_hint)`.
 */
export function emitWakeTick(tx: Tx, reason: string, source: string | null, createdAt: string, triggerId: string | null = null): void {
  const key = `wake_hint:${triggerId ?? source ?? 'unknown'}:${createdAt}`;
  const decision = decideIdleSignal(factsOf(tx.doc), { kind: 'wake_hint', duplicate: tx.doc.recent_keys.includes(key) });
  recordDecision(tx, decision);
  if (decision.kind !== 'emit_system_tick') return;
  admitMessage(tx.doc, { kind: 'system_tick', origin: { kind: 'system', subsystem: 'wake_hint' }, authority_class: 'runtime_instruction', priority: 'next', body: { type: 'text', text: `wake hint: ${reason}` }, idempotency_key: key, metadata: { wake_hint: { reason, source, external_trigger_id: triggerId, idempotency_key: key } } }, tx.now);
  tx.emit('message_queued', { kind: 'system_tick', reason: 'wake_hint' });
}

/**
 * Ingress: what enters an agent from outside — operator prompts, enqueued events, wake hints and
 * callbacks through capability URLs. Each is accepted in one (pipelined) operation of the agent's
 * lane, within the inbox bounds (`InboxBounds`: beyond them 429 `inbox_full`, nothing queued); the
 * scheduler takes it from there.
 */
export class Ingress {
  constructor(
    private readonly cells: Pick<AgentCells, 'mutateCell' | 'cell' | 'loadedCell' | 'doc' | 'load'>,
    /** The agent a capability token belongs to, unloaded (`Placement.callbackAgent`). */
    private readonly agentOfToken: (token: string) => Promise<string | null>,
    private readonly bounds: InboxBounds,
  ) {}

  prompt(agentId: string, request: PromptRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    return promised(() => {
      const req = PromptRequest.parse(request);
      const workItemId = req.work_item_id ?? null;
      const message: NewMessage = { kind: 'operator_prompt', origin: { kind: 'operator' }, authority_class: 'operator_instruction', priority: 'interject', body: { type: 'text', text: req.text }, work_item_id: workItemId };
      if (workItemId === null) return this.queueMessage(agentId, message, options);
      return this.cells.doc(agentId).then((doc) => {
        if (!doc.work_items.some((w) => w.id === workItemId)) throw new DomainError('work_item_not_found', `work item ${workItemId} not found`);
        return this.queueMessage(agentId, message, options);
      });
    });
  }

  async enqueue(agentId: string, request: EnqueueRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    const req = EnqueueRequest.parse(request);
    const origin = req.origin ?? (req.kind === 'channel_event' ? { kind: 'channel' as const, channel_id: 'http' } : { kind: 'webhook' as const, source: 'http' });
    if ((req.kind === 'channel_event') !== (origin.kind === 'channel')) throw new DomainError('forbidden', `kind ${req.kind} does not go with origin ${origin.kind}`);
    const body = req.json !== undefined ? { type: 'json' as const, value: req.json } : { type: 'text' as const, text: req.text ?? '' };
    return this.queueMessage(agentId, { kind: req.kind, origin, authority_class: origin.kind === 'channel' ? 'external_evidence' : 'integration_signal', priority: req.priority, body }, options);
  }

  async wake(agentId: string, request: WakeRequest, options: MutationOptions = {}): Promise<WakeResult> {
    const req = WakeRequest.parse(request);
    return this.submitWakeHint(agentId, req.reason, req.source ?? 'control', null, undefined, options);
  }

  async deliverCallback(mode: 'wake_hint' | 'enqueue_message', token: string, body: CallbackBody): Promise<CallbackResult> {
    const found = await this.findTrigger(token);
    if (!found || found.trigger.status !== 'active' || found.trigger.delivery_mode !== mode) {
      throw new DomainError('forbidden', 'invalid callback capability');
    }
    const { agentId, trigger } = found;
    const deliveryId = newId('dlv');
    const text = callbackText(body);
    // The delivery is recorded in the commit that delivers it.
    const delivery = { triggerId: trigger.id, deliveryId };
    if (mode === 'wake_hint') {
      const result = await this.submitWakeHint(agentId, text.slice(0, 160) || 'external trigger fired', 'callback', trigger.id, delivery);
      return { agent_id: agentId, delivery_id: deliveryId, external_trigger_id: trigger.id, delivery_mode: mode, disposition: result.disposition };
    }
    const accepted = await this.queueMessage(agentId, {
      kind: 'callback_event',
      origin: { kind: 'callback', descriptor_id: trigger.id, source: 'capability_url' },
      authority_class: 'integration_signal',
      priority: 'normal',
      body: text ? { type: 'text', text } : null,
      metadata: { delivery_id: deliveryId, content_type: body.content_type },
    }, {}, delivery);
    return { agent_id: agentId, delivery_id: deliveryId, external_trigger_id: trigger.id, delivery_mode: mode, disposition: 'enqueued', message_id: accepted.message_id };
  }

  /** Queues a message in its own (pipelined, shallow) operation. */
  queueMessage(agentId: string, message: NewMessage, options: MutationOptions = {}, delivery?: Delivery): Promise<MessageAccepted> {
    return this.admit(agentId, bodyBytes(message.body), async (tx) => {
      refuseStopped(tx);
      const envelope = admitMessage(tx.doc, message, tx.now);
      tx.emit('message_queued', { message_id: envelope.id, kind: envelope.kind, priority: envelope.priority });
      if (delivery) recordDelivery(tx, delivery, 'enqueued');
      return { agent_id: agentId, message_id: envelope.id };
    }, { ...options, pipelined: true, shallow: true });
  }

  /** Seed 003 wake hint: liveness only, deduplicated while one is pending. */
  private submitWakeHint(agentId: string, reason: string, source: string, triggerId: string | null, delivery?: Delivery, options: MutationOptions = {}): Promise<WakeResult> {
    return this.admit(agentId, Buffer.byteLength(reason, 'utf8'), async (tx) => {
      const doc = tx.doc;
      const queueDepth = pendingCount(doc);
      const disposition = wakeHintDisposition({ status: doc.state.status, queue_depth: queueDepth });
      const hint = { reason, source };
      tx.tellChild('continuation', { type: 'WAKE_HINT', hint, status: doc.state.status, queueDepth });
      tx.emit('wake_hint', { disposition, reason, source, external_trigger_id: triggerId });
      const tickQueued = doc.queue.some((m) => m.status === 'queued' && m.origin.kind === 'system' && m.origin.subsystem === 'wake_hint');
      if (disposition === 'coalesced' && !tickQueued) {
        // Level-triggered: the latest hint is kept and replayed once the agent is idle again.
        doc.pending_wake_hint = { reason, source, external_trigger_id: triggerId, created_at: tx.now.toISOString() };
      } else if (disposition === 'triggered') {
        doc.pending_wake_hint = null;
        emitWakeTick(tx, reason, source, tx.now.toISOString(), triggerId);
      }
      if (delivery) recordDelivery(tx, delivery, disposition);
      return { agent_id: agentId, disposition };
    }, { ...options, pipelined: true });
  }

  /**
   * Runs an input's operation once the inbox bounds let it in (a retry whose Idempotency-Key the
   * agent recorded is answered from its record, bounds or not), holding its room until answered.
   */
  private admit<T>(agentId: string, bytes: number, operation: (tx: Tx) => Promise<T>, options: MutateOptions<T>): Promise<T> {
    // A loaded cell is taken without a promise: every accepted input passes here.
    const loaded = this.cells.loadedCell(agentId);
    if (loaded) return promised(() => this.admitTo(loaded, bytes, operation, options));
    return this.cells.cell(agentId).then((cell) => this.admitTo(cell, bytes, operation, options));
  }

  private admitTo<T>(cell: AgentCell, bytes: number, operation: (tx: Tx) => Promise<T>, options: MutateOptions<T>): Promise<T> {
    const key = options.idempotency?.key;
    const retry = key !== undefined && cell.head.idempotency.some((r) => r.key === key);
    const release = retry ? () => undefined : this.bounds.reserve(cell, bytes);
    return this.cells.mutateCell(cell, operation, options).then(
      (value) => {
        release();
        return value;
      },
      (error: unknown) => {
        release();
        throw error;
      },
    );
  }

  /** The token's agent is found unloaded (by its hash), then its stored hash is compared. */
  private async findTrigger(token: string): Promise<{ agentId: string; trigger: ExternalTriggerRecord } | null> {
    const agentId = await this.agentOfToken(token);
    const cell = agentId ? await this.cells.load(agentId) : null;
    // The map lookup narrows; the stored hash is still compared in constant time.
    const trigger = cell?.doc.triggers.find((t) => tokenMatches(token, t.token_hash));
    return cell && trigger ? { agentId: cell.id, trigger } : null;
  }
}
