import { z } from 'zod';

export const DeliveryMode = z.enum(['wake_hint', 'enqueue_message']);
export type DeliveryMode = z.infer<typeof DeliveryMode>;

export const ExternalTriggerStatus = z.enum(['active', 'revoked']);
export type ExternalTriggerStatus = z.infer<typeof ExternalTriggerStatus>;

/** The raw token is never stored: only its SHA-256 hash. */
export const ExternalTriggerRecord = z.object({
  id: z.string(),
  target_agent_id: z.string(),
  scope: z.literal('agent'),
  delivery_mode: DeliveryMode,
  token_hash: z.string(),
  status: ExternalTriggerStatus,
  is_default: z.boolean(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  last_delivered_at: z.string().nullable(),
  delivery_count: z.number().int().nonnegative(),
});
export type ExternalTriggerRecord = z.infer<typeof ExternalTriggerRecord>;

/** What summaries show of a trigger: never the token or URL. */
export const ExternalTriggerSummary = ExternalTriggerRecord.pick({ id: true, delivery_mode: true, status: true });
export type ExternalTriggerSummary = z.infer<typeof ExternalTriggerSummary>;
