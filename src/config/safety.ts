/**
 * The security rules of the configuration, closed by default: cleartext to a remote flow route,
 * unsigned remote deliveries and weak secrets (checks.ts) are refused unless an explicit,
 * documented opt-out is set (docs/configuration.md, "Security settings").
 */

import { isLoopbackUrl } from './checks.js';
import { ConfigError } from './config-error.js';
import { FLOW_PATH } from './limits.js';
import { VARIABLES } from './variables.js';
import type { WorldConfig } from './world-config.js';

/** Where deliveries go over HTTP: the configured flow URL, else the local `eve start` flow route. */
export function defaultFlowUrl(config: Pick<WorldConfig, 'flowUrl' | 'port'>): string {
  return config.flowUrl ?? `http://127.0.0.1:${config.port}${FLOW_PATH}`;
}

/**
 * Closed by default: bodies travel to a remote flow route encrypted. Throws a {@link ConfigError}
 * naming EVE_WORLD_AWS_FLOW_URL for an `http://` URL to a host that is not loopback, unless the
 * explicit opt-out EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1 is set.
 */
export function assertFlowUrlEncrypted(flowUrl: string, allowInsecure: boolean): void {
  if (allowInsecure || isLoopbackUrl(flowUrl) || new URL(flowUrl).protocol === 'https:') return;
  throw new ConfigError(
    VARIABLES.flowUrl.name,
    `is cleartext http to a host that is not loopback (${flowUrl}): step inputs and outputs would cross the network unencrypted. ` +
      `Use https (or set ${VARIABLES.allowInsecureFlowUrl.name}=1, on a private network only)`,
    VARIABLES.flowUrl.example,
  );
}

/**
 * Closed by default, checked before any client is built: deliveries to a flow route that is not on
 * this machine must be encrypted (https) and signed, or anyone who can see or reach the route could
 * read bodies or forge deliveries. Throws a {@link ConfigError} naming the setting to fix, unless
 * the URL is loopback or the explicit opt-outs (EVE_WORLD_AWS_ALLOW_INSECURE_FLOW_URL=1,
 * EVE_WORLD_AWS_ALLOW_UNSIGNED=1) are set.
 */
export function assertDeliveriesSafe(config: WorldConfig, flowUrl: string): void {
  assertFlowUrlEncrypted(flowUrl, config.allowInsecureFlowUrl);
  if (config.signingSecrets.length > 0 || config.signingSecretArn || config.allowUnsigned || isLoopbackUrl(flowUrl))
    return;
  throw new ConfigError(
    VARIABLES.signingSecret.name,
    `is required: deliveries go to ${flowUrl}, which is not a loopback address, and anyone who can reach an unsigned flow route can run steps. ` +
      `Set the same secret where the consumer runs and where the flow route runs (or ${VARIABLES.allowUnsigned.name}=1, on a private network only)`,
    VARIABLES.signingSecret.example,
  );
}

/** The line `start()` logs while unsigned deliveries are allowed; undefined when they are not. */
export function unsignedWarning(config: Pick<WorldConfig, 'allowUnsigned'>): string | undefined {
  if (!config.allowUnsigned) return undefined;
  return (
    `[eve-world-aws] WARNING: ${VARIABLES.allowUnsigned.name}=1: deliveries may go unsigned and the flow route accepts unsigned requests; ` +
    'anyone who can reach the flow route can run steps. Use it on a private network only; set EVE_WORLD_AWS_SIGNING_SECRET and unset it otherwise.'
  );
}
