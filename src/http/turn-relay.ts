import type { IncomingHttpHeaders } from 'node:http';
import { TurnClaimResponse } from './schemas.js';
import type { RuntimeApi } from '../runtime/api.js';

import { FORWARDED_BY } from './forwarded-headers.js';
/** Request headers a claim asked of another node carries as they came. */
const RELAYED_HEADERS = ['authorization', 'idempotency-key', 'x-request-id'] as const;

export interface RelayedClaim {
  body: unknown;
  replayed: boolean;
}

/**
 * Turn workers claim from any node (issue 19, docs/cluster-design.md): an offer lives on the node
 * that holds the agent. A claim with no local offer asks each other live node in turn (with
 * `wait_ms: 0` and `X-Holon-Forwarded-By`, so it never fans out again); the first turn granted is
 * relayed. Its run id names the agent, so the worker's heartbeats and complete sent to any node
 * are forwarded to the agent's holder (`forwarding.ts`).
 */
export class TurnRelay {
  constructor(
    private readonly runtime: RuntimeApi,
    private readonly nodeId: () => string,
  ) {}

  /** Whether a claim on this node may ask the others: a cluster node, for a claim not itself forwarded. */
  asksPeers(headers: IncomingHttpHeaders): boolean {
    return this.runtime.clustered === true && this.runtime.peers !== undefined && headers[FORWARDED_BY] === undefined;
  }

  /** A turn another live node granted for this claim, or `null` when none had one. */
  async claimElsewhere(request: { agent_ids?: string[] | undefined }, headers: IncomingHttpHeaders, signal: AbortSignal): Promise<RelayedClaim | null> {
    const peers = (await this.runtime.peers?.()) ?? [];
    const sent: Record<string, string> = { 'content-type': 'application/json', [FORWARDED_BY]: this.nodeId() };
    for (const name of RELAYED_HEADERS) {
      const value = headers[name];
      if (typeof value === 'string') sent[name] = value;
    }
    const body = JSON.stringify({ ...(request.agent_ids ? { agent_ids: request.agent_ids } : {}), wait_ms: 0 });
    for (const base of peers) {
      if (signal.aborted) return null;
      let answer: Response;
      try {
        answer = await fetch(`${base.replace(/\/+$/, '')}/api/control/turns/claim`, { method: 'POST', headers: sent, body, signal });
      } catch {
        continue; // not reachable now: its agents' offers wait for its lease to run out
      }
      if (answer.status !== 200) {
        await answer.arrayBuffer().catch(() => undefined);
        continue;
      }
      const parsed = TurnClaimResponse.safeParse(await answer.json().catch(() => null));
      if (!parsed.success) continue;
      return { body: parsed.data, replayed: answer.headers.get('idempotent-replay') === 'true' };
    }
    return null;
  }
}
