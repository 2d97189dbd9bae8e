import { connect } from 'node:net';

/** Resolves true when something accepts a connection on 127.0.0.1:port, false when refused. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Tries to connect until the port accepts (the process is still starting meanwhile). */
export async function untilAccepting(port: number): Promise<void> {
  while (!(await accepts(port))) await new Promise((resolve) => setTimeout(resolve, 20));
}
