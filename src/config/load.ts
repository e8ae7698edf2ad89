/**
 * Parsing: the environment and the tuning options -> one typed, frozen {@link WorldConfig},
 * validated once against their rows in the catalogue (`SETTINGS.variables`, `SETTINGS.tuning`;
 * catalogue.ts), whose defaults are the config's. The folder's invariants it keeps (one error kind,
 * the runtime's only reader of `process.env`) are in ./index.ts.
 */
import type { LogLevel } from '../telemetry/log.js';
import { SETTINGS } from './catalogue.js';
import { isHttpUrl, SECRET_RULE, secretWeakness } from './checks.js';
import { ConfigError } from './config-error.js';
import { assertFlowUrlEncrypted } from './safety.js';
import type { Env, FlagSetting, IntSetting, Setting, TextSetting } from './setting.js';
import type { WorldTuning } from './tuning.js';
import { ignoredVariables } from './warnings.js';
import type { DeploymentAffinityMode, Endpoints, WorldConfig } from './world-config.js';

/** A source of raw values: the environment, or the tuning options (keyed by option name). */
interface Source {
  raw(s: Setting): string | undefined;
  /** The name errors carry. */
  label(s: Setting): string;
}

function envSource(env: Env): Source {
  return {
    raw: (s) => {
      const v = env[s.name]?.trim();
      return v === undefined || v === '' ? undefined : v;
    },
    label: (s) => s.name,
  };
}

function tuningSource(tuning: Partial<Record<string, unknown>>): Source {
  return {
    raw: (s) => {
      const v = tuning[s.name];
      return v === undefined ? undefined : String(v);
    },
    label: (s) => `tuning.${s.name}`,
  };
}

function readInt(src: Source, s: IntSetting): number | undefined {
  const raw = src.raw(s);
  if (raw === undefined) return s.default;
  if (!/^\d+$/.test(raw)) throw new ConfigError(src.label(s), `must be a whole number, got "${raw}"`, s.example);
  const n = Number(raw);
  if (n < s.min || n > s.max)
    throw new ConfigError(src.label(s), `must be between ${s.min} and ${s.max}, got ${n}`, s.example);
  return n;
}

/** {@link readInt} for a setting with a default. */
function readCount(src: Source, s: IntSetting & { default: number }): number {
  return readInt(src, s) as number;
}

function readFlag(src: Source, s: FlagSetting): boolean {
  const raw = src.raw(s);
  if (raw === undefined) return false;
  if (/^(1|true|yes)$/i.test(raw)) return true;
  if (/^(0|false|no)$/i.test(raw)) return false;
  throw new ConfigError(src.label(s), `must be 1 or 0, got "${raw}"`, s.example);
}

/** The value (or the default, `<prefix>` filled in), checked; undefined when unset without default. */
function readText(src: Source, s: TextSetting, prefix = ''): string | undefined {
  const raw = src.raw(s) ?? s.default?.replace('<prefix>', prefix);
  if (raw === undefined) return undefined;
  const problem = s.check?.(raw);
  if (problem !== undefined) throw new ConfigError(src.label(s), problem, s.example);
  return raw;
}

function readUrl(src: Source, s: TextSetting): string | undefined {
  return readText(src, s)?.replace(/\/+$/, '');
}

function readSecrets(src: Source, s: TextSetting): readonly string[] {
  const secrets = (src.raw(s) ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  secrets.forEach((secret, i) => {
    const weak = secretWeakness(secret);
    if (weak === undefined) return;
    const which = secrets.length > 1 ? `secret ${i + 1} of the rotation list` : 'the secret';
    throw new ConfigError(
      src.label(s),
      `is too weak (${which} ${weak}): each secret must have ${SECRET_RULE.words}`,
      s.example,
    );
  });
  return Object.freeze(secrets);
}

function readTuning(tuning: Partial<WorldTuning>): WorldTuning {
  const src = tuningSource(tuning as Record<string, unknown>);
  const T = SETTINGS.tuning;
  const streamPollMs = readCount(src, T.streamPollMs);
  const streamIdlePollMs = readCount(src, T.streamIdlePollMs);
  if (streamIdlePollMs < streamPollMs) {
    throw new ConfigError(
      src.label(T.streamIdlePollMs),
      `must be >= streamPollMs (${streamPollMs})`,
      String(Math.max(1000, streamPollMs)),
    );
  }
  // Every row, in row order (the two above again, same values): a new option needs no line here.
  const entries = Object.entries(T).map(([k, row]) => [k, row.kind === 'int' ? readInt(src, row) : readText(src, row)]);
  return Object.fromEntries(entries) as unknown as WorldTuning;
}

/**
 * Parse and validate `env` (user-facing settings) and `tuning` (options). Throws a
 * {@link ConfigError} on the first bad value.
 */
export function loadConfig(env: Env = process.env, tuning: Partial<WorldTuning> = {}): WorldConfig {
  const src = envSource(env);
  const V = SETTINGS.variables;
  const prefix = readText(src, V.prefix) as string;
  // AWS_DEFAULT_REGION is the SDK's older spelling; a bad value is reported as AWS_REGION.
  const region = readText(
    envSource({ [V.region.name]: env[V.region.name]?.trim() || env.AWS_DEFAULT_REGION }),
    V.region,
  );
  const all = readUrl(src, V.endpoint);
  const endpoints: Endpoints = Object.freeze({
    dynamodb: readUrl(src, V.endpointDynamodb) ?? all,
    sqs: readUrl(src, V.endpointSqs) ?? all,
    s3: readUrl(src, V.endpointS3) ?? all,
    scheduler: readUrl(src, V.endpointScheduler) ?? all,
    kms: readUrl(src, V.endpointKms) ?? all,
    secretsManager: readUrl(src, V.endpointSecretsManager) ?? all,
    lambda: readUrl(src, V.endpointLambda) ?? all,
  });
  const signingSecrets = readSecrets(src, V.signingSecret);
  const signingSecretArn = readText(src, V.signingSecretArn);
  if (signingSecretArn !== undefined && signingSecrets.length > 0) {
    throw new ConfigError(
      V.signingSecretArn.name,
      `cannot be set together with ${V.signingSecret.name} (which one would sign?); keep one of them`,
      V.signingSecretArn.example,
    );
  }
  const flowUrl = readUrl(src, V.flowUrl);
  const allowInsecureFlowUrl = readFlag(src, V.allowInsecureFlowUrl);
  if (flowUrl !== undefined) assertFlowUrlEncrypted(flowUrl, allowInsecureFlowUrl);

  const tuned = readTuning(tuning);
  const lambdaName = src.raw(V.lambda);
  return Object.freeze({
    ...tuned,
    deploymentId: tuned.deploymentId ?? readText(src, V.deploymentId),
    deploymentAffinity: readText(src, V.deploymentAffinity) as DeploymentAffinityMode,
    lambdaFunction: lambdaName === undefined ? undefined : { name: lambdaName, version: src.raw(V.lambdaVersion) },
    queueNamespace: src.raw(V.queueNamespace),
    region,
    endpoints,
    emulatorCredentials:
      env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? Object.freeze({ accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY })
        : undefined,
    prefix,
    tableName: readText(src, V.tableName, prefix) as string,
    queue: readUrlOrName(src, V.queue, prefix),
    deadLetterQueue: readUrlOrName(src, V.deadLetterQueue, prefix),
    bucket: readText(src, V.bucket, prefix) as string,
    signingSecrets,
    signingSecretArn,
    allowUnsigned: readFlag(src, V.allowUnsigned),
    trustForwardedHost: readFlag(src, V.trustForwardedHost),
    flowUrl,
    hostFunction: readText(src, V.hostFunction),
    allowInsecureFlowUrl,
    port: readCount(src, V.port),
    inLambda: src.raw(V.lambda) !== undefined,
    consumerConcurrency: readCount(src, V.consumerConcurrency),
    retentionDays: readInt(src, V.retentionDays),
    visibilityTimeoutSeconds: readCount(src, V.visibilityTimeoutSeconds),
    maxReceiveCount: readCount(src, V.maxReceiveCount),
    schedulerRoleArn: readText(src, V.schedulerRoleArn),
    schedulerGroup: readText(src, V.schedulerGroup, prefix) as string,
    kmsKeyId: readText(src, V.kmsKeyId),
    // Unset: on in Lambda, whose stdout CloudWatch Logs reads (a terminal would only print JSON).
    metrics: (readText(src, V.metrics) ?? (src.raw(V.lambda) !== undefined ? '1' : '0')) === '1',
    logLevel: readText(src, V.logLevel) as LogLevel,
    ignoredVariables: Object.freeze(ignoredVariables(env)),
  });
}

function readUrlOrName(src: Source, s: TextSetting, prefix: string): string {
  const v = readText(src, s, prefix) as string;
  return isHttpUrl(v) ? v.replace(/\/+$/, '') : v;
}

/** `config` with `tuning` applied over it, validated like {@link loadConfig}'s. */
export function withTuning(config: WorldConfig, tuning: Partial<WorldTuning> | undefined): WorldConfig {
  if (tuning === undefined || Object.keys(tuning).length === 0) return config;
  const current: Partial<WorldTuning> = {};
  for (const k of Object.keys(SETTINGS.tuning) as (keyof WorldTuning)[])
    (current as Record<string, unknown>)[k] = config[k];
  return Object.freeze({ ...config, ...readTuning({ ...current, ...tuning }) });
}

let cached: WorldConfig | undefined;

/** The process-wide config from `process.env`, parsed on first use. */
export function getConfig(): WorldConfig {
  cached ??= loadConfig(process.env);
  return cached;
}
