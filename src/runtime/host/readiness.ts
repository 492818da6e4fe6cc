import type { Readiness } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import type { ClusterNode } from './cluster-node.js';
import type { LeaseKeeper } from './lease-keeper.js';

export interface ReadinessParts {
  store: Store;
  nodeId: string;
  lease: Pick<LeaseKeeper, 'readiness'>;
  cluster: Pick<ClusterNode, 'readiness'> | null;
  progress: Readiness['progress'];
}

/**
 * `/readyz`. One node of an embedded store is ready while it holds the store's write lease; a
 * cluster node holds none, and is ready while the database answers and its heartbeat (which
 * renews its agent leases) reached it within two beats.
 */
export async function readinessOf({ store, nodeId, lease, cluster, progress }: ReadinessParts): Promise<Readiness> {
  const process_ = { pid: process.pid, uptime_s: Math.round(process.uptime()) };
  if (!cluster) {
    const { storeOk, held, ...rest } = await lease.readiness();
    return { ok: storeOk && held, process: process_, lease: { held, ...rest }, dependencies: { store: { ok: storeOk, kind: store.kind } }, progress };
  }
  let liveNodes: number | null = null;
  try {
    liveNodes = (await store.listLiveNodes()).length;
  } catch {
    liveNodes = null;
  }
  const { healthy, leases_held, heartbeat } = cluster.readiness();
  const storeOk = liveNodes !== null;
  return {
    ok: storeOk && healthy,
    process: process_,
    lease: { held: false, holder: null, expires_at: null, fencing_token: 0 },
    dependencies: { store: { ok: storeOk, kind: store.kind } },
    node: { node_id: nodeId, agent_leases_held: leases_held, live_nodes: liveNodes, heartbeat },
    progress,
  };
}
