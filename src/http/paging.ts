import { z } from 'zod';
import { DomainError } from '../domain/index.js';
import type { Page } from '../runtime/api.js';

/** Query of lists the runtime returns whole: paged here by offset (`cursor` = the next offset). */
export const ListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(512).default(128),
    cursor: z.string().regex(/^\d{1,9}$/, 'cursor must be a value returned as next_cursor').optional(),
  })
  .strict();
export type ListQuery = z.infer<typeof ListQuery>;

export function pageOf<T>(items: readonly T[], query: ListQuery): Page<T> {
  const offset = query.cursor === undefined ? 0 : Number(query.cursor);
  if (offset > items.length) throw new DomainError('cursor_not_found', 'the cursor is past the end of the list');
  const end = offset + query.limit;
  return { items: items.slice(offset, end), next_cursor: end < items.length ? String(end) : null };
}
