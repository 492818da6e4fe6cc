import type { DeliveryMode, ExternalTriggerRecord, ExternalTriggerSummary, TriggerCapability } from '../../domain/index.js';
import type { CallbackBody } from '../api.js';
import type { Tx } from '../agent/tx.js';
import { hashToken, mintToken } from '../capability.js';
import { newId } from '../clock.js';
import { findTriggerRecord } from './lookups.js';
import { triggerSummary } from './views.js';

/** One callback delivery through a trigger, recorded on the trigger. */
export interface Delivery {
  triggerId: string;
  deliveryId: string;
}

/**
 * Provisions an external trigger (an ingress capability). Its token is minted here, shown once:
 * the record keeps its hash, the capability (raw token included) is this operation's answer and
 * `tx.minted` (for an operation whose answer is another, e.g. a create).
 */
export function provisionTrigger(tx: Tx, mode: DeliveryMode, isDefault: boolean): TriggerCapability {
  const token = mintToken();
  const trigger: ExternalTriggerRecord = {
    id: newId('trg'),
    target_agent_id: tx.cell.id,
    scope: 'agent',
    delivery_mode: mode,
    token_hash: hashToken(token),
    status: 'active',
    is_default: isDefault,
    created_at: tx.now.toISOString(),
    revoked_at: null,
    last_delivered_at: null,
    delivery_count: 0,
  };
  tx.doc.triggers.push(trigger);
  tx.emit('trigger_created', { trigger_id: trigger.id, delivery_mode: mode, is_default: isDefault });
  const capability = { trigger: triggerSummary(trigger), token, delivery_mode: mode };
  tx.minted.push(capability);
  return capability;
}

/** The agent's default (wake-hint) trigger, unless it has an active one. */
export function provisionDefaultTrigger(tx: Tx): void {
  if (tx.doc.triggers.some((t) => t.is_default && t.status === 'active')) return;
  provisionTrigger(tx, 'wake_hint', true);
}

export function revokeTriggerRecord(tx: Tx, trigger: ExternalTriggerRecord): void {
  trigger.status = 'revoked';
  trigger.revoked_at = tx.now.toISOString();
  tx.emit('trigger_revoked', { trigger_id: trigger.id, delivery_mode: trigger.delivery_mode });
}

/** Revokes every active trigger (stop, terminate). */
export function revokeAllTriggers(tx: Tx): void {
  for (const trigger of tx.doc.triggers) if (trigger.status === 'active') revokeTriggerRecord(tx, trigger);
}

/** RevokeTrigger by request: a revoked trigger is answered as it is. */
export function revokeTrigger(tx: Tx, triggerId: string): ExternalTriggerSummary {
  const trigger = findTriggerRecord(tx.doc, triggerId);
  if (trigger.status === 'active') revokeTriggerRecord(tx, trigger);
  return triggerSummary(trigger);
}

/** ResetCallback: the default trigger is replaced by a new one (a new capability URL). */
export function resetDefaultTrigger(tx: Tx): TriggerCapability {
  for (const trigger of tx.doc.triggers) if (trigger.is_default && trigger.status === 'active') revokeTriggerRecord(tx, trigger);
  return provisionTrigger(tx, 'wake_hint', true);
}

export function recordDelivery(tx: Tx, { triggerId, deliveryId }: Delivery, disposition: string): void {
  const trigger = tx.doc.triggers.find((t) => t.id === triggerId);
  if (!trigger) return;
  // Replaced, not edited: a message's shallow draft shares the head's triggers.
  const delivered = { ...trigger, delivery_count: trigger.delivery_count + 1, last_delivered_at: tx.now.toISOString() };
  tx.doc.triggers = tx.doc.triggers.map((t) => (t === trigger ? delivered : t));
  tx.emit('callback_delivered', { delivery_id: deliveryId, external_trigger_id: triggerId, disposition });
}

/** A capability as an idempotency record keeps it: the token is shown once, never stored. */
export function withoutToken(capability: TriggerCapability): TriggerCapability {
  return { ...capability, token: '' };
}

/** A callback's body as the text of its wake hint or message. */
export function callbackText(body: CallbackBody): string {
  if (body.body.length === 0) return '';
  const type = (body.content_type ?? '').toLowerCase();
  if (type.includes('json') || type.startsWith('text/') || type === '') return body.body.toString('utf8').trim();
  return JSON.stringify({ content_type: body.content_type, body_base64: body.body.toString('base64') });
}
