import type { GatewayProcess } from './gateway-process.js';

/** The value of one sample of the Prometheus text, e.g. `gateway_ready`; 0 when absent. */
export function sample(metrics: string, series: string): number {
  for (const line of metrics.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

/** One sample read from a gateway's admin port /metrics. */
export async function scrapeMetric(gateway: GatewayProcess, series: string): Promise<number> {
  const res = await fetch(`${gateway.adminUrl ?? ''}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${String(res.status)}`);
  return sample(await res.text(), series);
}

/** How many bcrypt compares a gateway has run. */
export const BCRYPT_COMPARES = 'gateway_bcrypt_compares_total';
