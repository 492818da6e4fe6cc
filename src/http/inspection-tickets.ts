import { createHash, randomBytes } from 'node:crypto';

/** How long a ticket may wait for its connection. */
export const TICKET_TTL_MS = 30_000;
/** Tickets waiting at once; minting beyond evicts the oldest (each is one connection that did not come). */
const MAX_TICKETS = 1_024;

const hash = (ticket: string): string => createHash('sha256').update(ticket, 'utf8').digest('base64url');

/**
 * Single-use, short-lived tickets for the inspection WebSocket in bearer mode: a WebSocket client
 * (Stately's `createWebSocketReceiver`) cannot send an `Authorization` header, so a client holding
 * the bearer token mints a ticket for one agent and puts it in the URL. A ticket opens one
 * connection to that agent's inspection stream within {@link TICKET_TTL_MS}; it is kept only as a
 * hash and, like a capability token, never logged (`redactPath`).
 */
export class InspectionTickets {
  private readonly waiting = new Map<string, { agentId: string; expiresAt: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  issue(agentId: string): { ticket: string; expires_at: string } {
    this.purge();
    const ticket = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + TICKET_TTL_MS;
    this.waiting.set(hash(ticket), { agentId, expiresAt });
    for (const oldest of this.waiting.keys()) {
      if (this.waiting.size <= MAX_TICKETS) break;
      this.waiting.delete(oldest);
    }
    return { ticket, expires_at: new Date(expiresAt).toISOString() };
  }

  /** True once for a ticket minted for `agentId` and not expired; it is spent either way. */
  redeem(agentId: string, ticket: string): boolean {
    const key = hash(ticket);
    const found = this.waiting.get(key);
    this.waiting.delete(key);
    return found !== undefined && found.agentId === agentId && found.expiresAt > this.now();
  }

  private purge(): void {
    const now = this.now();
    for (const [key, entry] of this.waiting) if (entry.expiresAt <= now) this.waiting.delete(key);
  }
}
