import { z } from 'zod';

export const TimerStatus = z.enum(['active', 'completed', 'cancelled']);
export type TimerStatus = z.infer<typeof TimerStatus>;

export const TimerRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  created_at: z.string(),
  duration_ms: z.number().int().nonnegative(),
  interval_ms: z.number().int().positive().nullable(),
  status: TimerStatus,
  summary: z.string().nullable(),
  next_fire_at: z.string().nullable(),
  last_fired_at: z.string().nullable(),
  fire_count: z.number().int().nonnegative(),
});
export type TimerRecord = z.infer<typeof TimerRecord>;
