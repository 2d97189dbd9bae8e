import { createAdminServer, type NotReadyCode } from '../admin/admin-server.js';
import { listenOn } from '../http/listen.js';
import { createAggregatedMetrics, type MetricsSnapshot } from '../observability/metrics.js';
import type { WorkerReadiness } from './messages.js';
import { ask, live, startFailed, type WorkerSetState } from './set-state.js';

/** Every worker listens: open the admin port, then say the set is up. */
export async function opened(set: WorkerSetState, port: number): Promise<void> {
  const { config } = set;
  if (config.admin.enabled) {
    set.admin = createAdminServer({
      metrics: createAggregatedMetrics(
        () => collectMetrics(set),
        // A worker missing (being replaced) or a drain makes the set not ready.
        () => set.phase === 'running' && set.slots.every((slot) => slot.state === 'listening'),
        set.own.registry,
      ),
      ready: () => readiness(set),
      draining: () => set.phase !== 'running',
    });
    try {
      const adminPort = await listenOn(
        set.admin,
        config.admin.host,
        config.admin.port,
        'admin port',
      );
      if (set.phase !== 'starting') return;
      listening(set, port, adminPort);
    } catch (error) {
      startFailed(set, error);
    }
  } else if (set.phase === 'starting') listening(set, port, undefined);
}

function listening(set: WorkerSetState, port: number, adminPort: number | undefined): void {
  set.phase = 'running';
  set.logger.info(
    {
      host: set.config.server.host,
      port,
      admin_port: adminPort,
      store: set.config.credentials.store,
      workers: set.slots.length,
      worker_pids: set.slots.map((slot) => slot.worker?.process.pid),
    },
    'gateway listening',
  );
  set.started();
}

async function readiness(set: WorkerSetState): Promise<boolean | NotReadyCode> {
  const states = await Promise.all(
    set.slots.map(async (slot): Promise<SlotReadiness> => {
      if (slot.worker === undefined || slot.state !== 'listening') return 'missing';
      const answer = await ask(set, slot, 'readiness?');
      return answer?.type === 'readiness' ? answer.state : 'silent';
    }),
  );
  return combineReadiness(states);
}

async function collectMetrics(set: WorkerSetState): Promise<MetricsSnapshot[]> {
  const answers = await Promise.all(live(set).map((slot) => ask(set, slot, 'metrics?')));
  return answers.flatMap((answer) => (answer?.type === 'metrics' ? [answer.metrics] : []));
}

/**
 * What one slot says when /readyz asks: its worker's answer, `missing` when no worker listens
 * in it (being replaced, or still starting), `silent` when the worker did not answer in time.
 */
export type SlotReadiness = WorkerReadiness | 'missing' | 'silent';

/**
 * The set is ready when every slot's worker is: a draining worker makes it `draining`, a
 * store that does not answer `credential_store_unavailable` (false), and a missing or silent
 * worker (capacity the set does not have) `overloaded`.
 */
export function combineReadiness(states: readonly SlotReadiness[]): boolean | NotReadyCode {
  if (states.includes('draining')) return 'draining';
  if (states.includes('store_unavailable')) return false;
  return states.every((state) => state === 'ready') ? true : 'overloaded';
}
