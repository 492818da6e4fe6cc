import { z } from 'zod';

/** An external side effect recorded before (`started`) and after (`done`/`failed`) it runs. */
export const EffectStatus = z.enum(['started', 'done', 'failed', 'in_doubt_resolved']);
export type EffectStatus = z.infer<typeof EffectStatus>;

export const EffectKind = z.enum([
  'start_command',
  'revoke_trigger',
  'emit_parent_result',
  'take_snapshot',
  'release_lease',
  'initialize',
  'sleep',
  'wake',
  'recover',
  'evolve',
  'terminate',
]);
export type EffectKind = z.infer<typeof EffectKind>;

export const EffectRecord = z.object({
  idempotency_key: z.string(),
  agent_id: z.string(),
  kind: EffectKind,
  status: EffectStatus,
  started_at: z.string(),
  finished_at: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
export type EffectRecord = z.infer<typeof EffectRecord>;
