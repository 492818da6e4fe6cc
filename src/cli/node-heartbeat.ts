import type { Store } from '../store/index.js';

/** How long a node's registration lives without a heartbeat; it heartbeats every third of it. */
export const NODE_TTL_MS = 10_000;

export interface NodeHeartbeat {
  /** Stops heartbeating and unregisters the node (clean shutdown). */
  stop(): Promise<void>;
}

/**
 * Keeps this node in the store's nodes registry under `nodeId` with the address other nodes reach
 * it at: registers at once (a failure there fails the start), then renews every `ttlMs / 3`;
 * a failed renewal is reported and retried on the next beat (the registration lapses on its own
 * if the database stays away).
 */
export async function startNodeHeartbeat(
  store: Store,
  nodeId: string,
  advertiseUrl: string,
  onFailure: (error: unknown) => void,
  ttlMs = NODE_TTL_MS,
): Promise<NodeHeartbeat> {
  await store.heartbeatNode(nodeId, advertiseUrl, ttlMs);
  let beating: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    beating = store.heartbeatNode(nodeId, advertiseUrl, ttlMs).catch(onFailure);
  }, Math.floor(ttlMs / 3));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await beating;
      await store.removeNode(nodeId);
    },
  };
}
