/**
 * The signing secret read from Secrets Manager (EVE_WORLD_AWS_SIGNING_SECRET_ARN), so no function
 * configuration ever holds it: `lambda:GetFunctionConfiguration` shows an ARN, and reading the
 * value needs `secretsmanager:GetSecretValue` on that one secret.
 *
 * Invariants:
 * - Read on first use (a cold start that never delivers or verifies reads nothing), then cached for
 *   {@link SecretSourceOptions.ttlMs}; concurrent readers share one read. The SDK client is loaded
 *   only then (`clients.secretsManager()`), never by importing the World.
 * - The AWSCURRENT value signs (its first entry when it is a comma-separated list, as in
 *   EVE_WORLD_AWS_SIGNING_SECRET, and held to the same strength); AWSCURRENT and AWSPREVIOUS
 *   verify, so during a rotation a sender with a stale cache and a receiver with a fresh one (or
 *   the reverse) still agree.
 * - After a signature did not verify, the receiver re-reads at most once per {@link
 *   SecretSourceOptions.minRefreshMs}: a rotation is picked up at the first delivery signed with
 *   the new value, while a stream of forged requests costs one read per interval.
 * - A failed re-read keeps serving the last good value (the caller answers 503 only when there is
 *   none yet: ../route/queue-handler.ts).
 */
import type { GetSecretValueCommandOutput } from '@aws-sdk/client-secrets-manager';
import type { AwsClients } from '../../aws/clients.js';
import { isNotFound } from '../../aws/sdk-errors.js';
import { SECRET_RULE, secretWeakness } from '../../config/index.js';

export interface SigningSecretSource {
  signing(): Promise<string>;
  /** The secrets a signature may be made with. */
  accepted(): Promise<readonly string[]>;
  /** A signature failed: re-read if the last read is old enough; true when the accepted set changed. */
  refreshAfterFailure(): Promise<boolean>;
}

export interface SecretSourceOptions {
  /** How long a read value is used before it is read again (ms). Default 5 minutes. */
  ttlMs?: number;
  /** Fewest ms between two re-reads caused by signature failures. Default 10 000. */
  minRefreshMs?: number;
  now?: () => number;
}

interface Loaded {
  signing: string;
  accepted: readonly string[];
  at: number;
}

/** The secrets in one secret string: comma-separated, trimmed, each as strong as the config demands. */
function parseSecretString(arn: string, stage: string, text: string | undefined): string[] {
  const list = (text ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  const weak = list.length === 0 ? 'is empty' : list.map(secretWeakness).find((w) => w !== undefined);
  if (weak !== undefined) {
    throw new Error(
      `the ${stage} value of signing secret ${arn} ${weak}: each secret (comma-separated for rotation) must have ${SECRET_RULE.words}; ` +
        'set it with `aws secretsmanager put-secret-value --secret-id <arn> --secret-string "$(openssl rand -hex 32)"`',
    );
  }
  return list;
}

class SecretsManagerSigningSecret implements SigningSecretSource {
  #loaded?: Loaded;
  #loading?: Promise<Loaded>;
  #lastRead = Number.NEGATIVE_INFINITY;
  readonly #ttlMs: number;
  readonly #minRefreshMs: number;
  readonly #now: () => number;

  constructor(
    private readonly clients: Pick<AwsClients, 'secretsManager'>,
    readonly arn: string,
    opts: SecretSourceOptions = {},
  ) {
    this.#ttlMs = opts.ttlMs ?? 5 * 60_000;
    this.#minRefreshMs = opts.minRefreshMs ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  async signing(): Promise<string> {
    return (await this.#current()).signing;
  }

  async accepted(): Promise<readonly string[]> {
    return (await this.#current()).accepted;
  }

  async refreshAfterFailure(): Promise<boolean> {
    if (this.#now() - this.#lastRead < this.#minRefreshMs) return false;
    const before = this.#loaded?.accepted.join('\n');
    try {
      const fresh = await this.#read();
      return fresh.accepted.join('\n') !== before;
    } catch {
      return false;
    }
  }

  async #current(): Promise<Loaded> {
    const l = this.#loaded;
    if (l && this.#now() - l.at < this.#ttlMs) return l;
    try {
      return await this.#read();
    } catch (err) {
      if (l) return l; // stale beats none: the old value still verifies what was signed with it
      throw err;
    }
  }

  #read(): Promise<Loaded> {
    this.#loading ??= this.#fetch().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #fetch(): Promise<Loaded> {
    this.#lastRead = this.#now();
    const sm = await this.clients.secretsManager();
    const { GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
    const get = (VersionStage: string) =>
      sm.send(new GetSecretValueCommand({ SecretId: this.arn, VersionStage })) as Promise<GetSecretValueCommandOutput>;
    const current = parseSecretString(this.arn, 'AWSCURRENT', (await get('AWSCURRENT')).SecretString);
    // No previous version (never rotated, a not-found error), or not a usable secret: current only.
    // Any other failure of the read is thrown (told apart by the error's name, never its text).
    let previousText: string | undefined;
    try {
      previousText = (await get('AWSPREVIOUS')).SecretString;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    let previous: string[] = [];
    if (previousText !== undefined) {
      try {
        previous = parseSecretString(this.arn, 'AWSPREVIOUS', previousText);
      } catch {
        // not a usable secret: current only
      }
    }
    const loaded: Loaded = {
      signing: current[0],
      accepted: Object.freeze([...new Set([...current, ...previous])]),
      at: this.#now(),
    };
    this.#loaded = loaded;
    return loaded;
  }
}

/** The configured source, or undefined when the secret comes from the environment (or is absent). */
export function signingSecretSource(
  config: { signingSecretArn?: string },
  clients: Pick<AwsClients, 'secretsManager'>,
  opts?: SecretSourceOptions,
): SigningSecretSource | undefined {
  return config.signingSecretArn ? new SecretsManagerSigningSecret(clients, config.signingSecretArn, opts) : undefined;
}
