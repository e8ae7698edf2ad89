/**
 * The flow route behind the World's write gate (src/preflight/write-gate.ts). The flow route is
 * where a host that never calls `start()` (Lambda) first writes: it checks the table's format and
 * joins the fleet first (once).
 *
 * Invariant: while the gate refuses, the route answers 503 (`Table format refused`, or
 * `Unavailable` when the format could not be read) and runs nothing; the consumers treat a 503 as
 * an outage, so the message is parked, never dead-lettered. Each refusal is logged.
 */
import { TableFormatError } from '../../preflight/format-check.js';
import type { Logger } from '../../telemetry/log.js';

type Route = (req: Request) => Promise<Response>;

export function guardedRoute(route: Route, gate: () => Promise<void>, logger: Logger): Route {
  return async (req) => {
    try {
      await gate();
    } catch (err) {
      const refused = err instanceof TableFormatError;
      logger.error(`[eve-world-aws] flow route: ${refused ? '' : 'cannot read the table format: '}${String(err)}`);
      return Response.json({ error: refused ? 'Table format refused' : 'Unavailable' }, { status: 503 });
    }
    return route(req);
  };
}
