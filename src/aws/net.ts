import { connect } from 'node:net';

/**
 * True when a TCP connection to the URL's host:port opens within `timeoutMs`. A cheap reachability
 * probe: the AWS SDK retries a refused connection for many seconds without naming the endpoint.
 */
export function canConnect(url: string, timeoutMs = 1000): Promise<boolean> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const sock = connect({ host: u.hostname, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
    sock.once('timeout', () => done(false));
  });
}
