/**
 * Stand-in for the host's Function URL in the Lambda-mode test: forwards every request to the
 * eve server (as the Lambda Web Adapter does) and records what reached the flow route, so the test
 * can show that every delivery was signed. When the host is down it answers 502, as a Function
 * URL does when the function fails.
 */
import { createServer, request, type Server } from 'node:http';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../src/consumer/shared/signing.js';

export interface FlowRequest {
  path: string;
  signed: boolean;
  status: number;
}

export class FunctionUrlProxy {
  readonly requests: FlowRequest[] = [];
  private server?: Server;

  constructor(private readonly target: () => string) {}

  async listen(port: number): Promise<void> {
    this.server = createServer((req, res) => {
      const target = new URL(req.url ?? '/', this.target());
      const isFlow = req.url?.startsWith('/.well-known/workflow/') ?? false;
      const record = (status: number) => {
        if (isFlow)
          this.requests.push({
            path: req.url as string,
            signed: Boolean(req.headers[SIGNATURE_HEADER] && req.headers[TIMESTAMP_HEADER]),
            status,
          });
      };
      // Streamed both ways (the Function URL is in RESPONSE_STREAM mode): NDJSON session streams
      // pass through chunk by chunk.
      // As a Function URL with the Lambda Web Adapter: the app sees the host the worker sent to in
      // `Host`, so the signed destination verifies without trusting x-forwarded-host (docs/security.md).
      const headers = { ...req.headers, host: req.headers.host };
      const upstream = request(target, { method: req.method, headers }, (up) => {
        record(up.statusCode ?? 502);
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        up.on('error', () => res.destroy());
      });
      upstream.on('error', () => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        record(502);
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end('{"message":"Internal Server Error"}');
      });
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
