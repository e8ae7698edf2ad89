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
import { type JsonBody, startJsonService } from './json-service.js';
import { ServiceError } from './service-server.js';

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

class SmError extends ServiceError {}

const MAX_BODY = 64 * 1024;
const NAME_RE = /^[A-Za-z0-9/_+=.@-]{1,512}$/;

type Body = JsonBody;

export async function startSecretsManagerServer(opts: SecretsManagerServerOptions = {}): Promise<SecretsManagerServer> {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const secrets = new Map<string, Secret>();

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

  return startJsonService({
    service: 'Secrets Manager',
    targetPrefix: 'secretsmanager',
    maxBodyBytes: MAX_BODY,
    tooLargeType: 'InvalidRequestException',
    internalType: 'InternalServiceError',
    operations,
    port: opts.port,
  });
}
