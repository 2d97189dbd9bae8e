import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';

/** Each thread's name and nice value, from /proc (stat's 19th field, after the name). */
function threadsOf(pid: number): { name: string; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const afterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trimEnd(),
      nice: Number(afterName[16]),
    };
  });
}

let gateway: GatewayProcess | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

describe.skipIf(process.platform !== 'linux')("the thread pool's CPU priority", () => {
  it('runs the pool where bcrypt works at nice 19 by default, and the event loop at 0', async () => {
    gateway = await startGateway(gatewayYaml());
    const threads = threadsOf(gateway.child.pid ?? 0);
    const pool = threads.filter((thread) => thread.name === 'libuv-worker');
    expect(pool.length).toBeGreaterThan(0);
    expect(pool.every((thread) => thread.nice === 19)).toBe(true);
    expect(threads.filter((thread) => thread.name !== 'libuv-worker').map((t) => t.nice)).toEqual(
      threads.filter((thread) => thread.name !== 'libuv-worker').map(() => 0),
    );
  });

  it('leaves the pool alone with server.threadPoolNice: 0', async () => {
    gateway = await startGateway(gatewayYaml({ config: { server: { threadPoolNice: 0 } } }));
    const pool = threadsOf(gateway.child.pid ?? 0).filter((t) => t.name === 'libuv-worker');
    expect(pool.length).toBeGreaterThan(0);
    expect(pool.map((thread) => thread.nice)).toEqual(pool.map(() => 0));
  });
});
