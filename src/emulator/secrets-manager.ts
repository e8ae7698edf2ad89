/**
 * A minimal AWS Secrets Manager endpoint for offline tests and the embedded emulator. Neither
 * fauxqs nor DynamoDB Local has one, so this speaks just enough of the Secrets Manager JSON 1.1
 * protocol (`POST /`, `X-Amz-Target: secretsmanager.<Operation>`) for the real
 * `@aws-sdk/client-secrets-manager` to talk to it over the wire:
 *
 *   CreateSecret, PutSecretValue, GetSecretValue (by name or ARN; VersionStage / VersionId)
 *
 * Invariants:
 * - Versions and stages behave as in Secrets Manager for string secrets: `CreateSecret` makes the
 *   AWSCURRENT version; `PutSecretValue` makes a new one AWSCURRENT and moves AWSPREVIOUS to the
 *   version that was current (rotation), so a reader can ask for either.
 * - A secret is addressed by its name or its ARN (`...:secret:<name>-<6 random characters>`).
 * - Listens on 127.0.0.1 only, requires a SigV4 `Authorization` header (not verified, like the
 *   other local emulators) and refuses bodies over 64 KiB. State is in memory only.
 *
 * Not implemented (`UnsupportedOperationException`): binary secrets, deletion, rotation
 * functions, resource policies, replication.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SecretsManagerServerOptions {
  /** Port on 127.0.0.1 (0 = any free port). */
  port?: number;
  region?: string;
  accountId?: string;
}

export interface SecretsManagerServer {
  readonly endpoint: string;
  readonly port: number;
  /** Requests served, by operation (successful or not). */
  readonly calls: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

interface Version {
  id: string;
  value: string;
  stages: Set<string>;
  createdAt: number;
}

interface Secret {
  name: string;
  arn: string;
  versions: Version[];
}

class SmError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const MAX_BODY = 64 * 1024;
const NAME_RE = /^[A-Za-z0-9/_+=.@-]{1,512}$/;

type Body = Record<string, unknown>;

export async function startSecretsManagerServer(opts: SecretsManagerServerOptions = {}): Promise<SecretsManagerServer> {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const secrets = new Map<string, Secret>();
  const calls = new Map<string, number>();

  const str = (body: Body, field: string, required = false): string | undefined => {
    const v = body[field];
    if (v === undefined || v === null) {
      if (required) throw new SmError('InvalidParameterException', `${field} is required`);
      return undefined;
    }
    if (typeof v !== 'string') throw new SmError('InvalidParameterException', `${field} must be a string`);
    return v;
  };
  const find = (ref: string): Secret => {
    const byName = secrets.get(ref);
    if (byName) return byName;
    for (const s of secrets.values()) if (s.arn === ref) return s;
    throw new SmError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
  };
  const addVersion = (s: Secret, value: string, token?: string): Version => {
    const previous = s.versions.find((v) => v.stages.has('AWSCURRENT'));
    for (const v of s.versions) v.stages.delete('AWSPREVIOUS');
    if (previous) {
      previous.stages.delete('AWSCURRENT');
      previous.stages.add('AWSPREVIOUS');
    }
    const v: Version = { id: token ?? randomUUID(), value, stages: new Set(['AWSCURRENT']), createdAt: Date.now() };
    s.versions.push(v);
    // Versions without a stage are dropped, as Secrets Manager eventually does.
    s.versions = s.versions.filter((x) => x.stages.size > 0);
    return v;
  };

  const operations: Record<string, (body: Body) => unknown> = {
    CreateSecret(body) {
      const name = str(body, 'Name', true) as string;
      if (!NAME_RE.test(name)) throw new SmError('InvalidParameterException', `Invalid secret name ${name}`);
      if (secrets.has(name)) throw new SmError('ResourceExistsException', `The secret ${name} already exists.`);
      if (body.SecretBinary !== undefined) throw new SmError('UnsupportedOperationException', 'binary secrets');
      const s: Secret = {
        name,
        arn: `arn:aws:secretsmanager:${region}:${account}:secret:${name}-${randomBytes(3).toString('hex')}`,
        versions: [],
      };
      secrets.set(name, s);
      const value = str(body, 'SecretString');
      const v = value === undefined ? undefined : addVersion(s, value, str(body, 'ClientRequestToken'));
      return { ARN: s.arn, Name: s.name, ...(v ? { VersionId: v.id } : {}) };
    },
    PutSecretValue(body) {
      const s = find(str(body, 'SecretId', true) as string);
      if (body.SecretBinary !== undefined) throw new SmError('UnsupportedOperationException', 'binary secrets');
      const v = addVersion(s, str(body, 'SecretString', true) as string, str(body, 'ClientRequestToken'));
      return { ARN: s.arn, Name: s.name, VersionId: v.id, VersionStages: [...v.stages] };
    },
    GetSecretValue(body) {
      const s = find(str(body, 'SecretId', true) as string);
      const id = str(body, 'VersionId');
      const stage = str(body, 'VersionStage') ?? (id === undefined ? 'AWSCURRENT' : undefined);
      const v = s.versions.find(
        (x) => (id === undefined || x.id === id) && (stage === undefined || x.stages.has(stage)),
      );
      if (!v) {
        throw new SmError(
          'ResourceNotFoundException',
          `Secrets Manager can't find the specified secret value for ${id ? `VersionId: ${id}` : `staging label: ${stage}`}`,
        );
      }
      return {
        ARN: s.arn,
        Name: s.name,
        VersionId: v.id,
        SecretString: v.value,
        VersionStages: [...v.stages],
        CreatedDate: v.createdAt / 1000,
      };
    },
  };

  const reply = (res: http.ServerResponse, status: number, payload: unknown) => {
    const body = JSON.stringify(payload);
    res.writeHead(status, {
      'content-type': 'application/x-amz-json-1.1',
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': randomUUID(),
    });
    res.end(body);
  };

  const server = http.createServer((req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    const op = target.startsWith('secretsmanager.') ? target.slice('secretsmanager.'.length) : '';
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooBig = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      calls.set(op || '(none)', (calls.get(op || '(none)') ?? 0) + 1);
      try {
        if (tooBig) throw new SmError('InvalidRequestException', `Request body is larger than ${MAX_BODY} bytes`, 413);
        if (req.method !== 'POST' || req.url !== '/')
          throw new SmError('UnknownOperationException', 'Secrets Manager accepts POST / only', 404);
        if (!/^AWS4-HMAC-SHA256 /.test(String(req.headers.authorization ?? ''))) {
          throw new SmError('MissingAuthenticationTokenException', 'Request is missing a SigV4 Authorization header');
        }
        const handler = Object.hasOwn(operations, op) ? operations[op] : undefined;
        if (!handler) {
          throw new SmError(
            op ? 'UnsupportedOperationException' : 'UnknownOperationException',
            op
              ? `${op} is not implemented by the eve-world-aws Secrets Manager emulator`
              : `X-Amz-Target must be secretsmanager.<Operation>, got "${target}"`,
          );
        }
        let body: Body;
        try {
          const text = Buffer.concat(chunks).toString('utf8');
          body = text.trim() === '' ? {} : (JSON.parse(text) as Body);
        } catch {
          throw new SmError('SerializationException', 'Request body is not JSON');
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw new SmError('SerializationException', 'Request body must be a JSON object');
        reply(res, 200, handler(body));
      } catch (err) {
        const e = err instanceof SmError ? err : new SmError('InternalServiceError', 'internal error', 500);
        res.setHeader('x-amzn-errortype', e.type);
        reply(res, e.status, { __type: e.type, message: e.message });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port ?? 0, host: '127.0.0.1' }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    calls,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
